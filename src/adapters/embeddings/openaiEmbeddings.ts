import OpenAI, { APIConnectionError } from 'openai';
import type { EmbeddingProvider } from '../../ports/embeddings';
import { unitVector } from '../../search/unitVector';

export interface EmbeddingsRequest {
  model: string;
  input: string[];
  dimensions?: number;
}
export interface EmbeddingsResponse {
  data: { index: number; embedding: number[] }[];
}
/** The one call the provider needs; defaults to the `openai` client's `embeddings.create`. */
export type CreateEmbeddings = (request: EmbeddingsRequest) => Promise<EmbeddingsResponse>;

export interface OpenAIEmbeddingsOptions {
  apiKey?: string;
  /** OpenAI-compatible server, e.g. http://localhost:8080/v1. */
  baseURL?: string;
  /** Default text-embedding-3-small. */
  model?: string;
  /** Requested output dimensions (text-embedding-3-* support shortening). */
  dimensions?: number;
  /** Inputs per request (default 256). */
  batchSize?: number;
  /** Retries after the first attempt on 429, 5xx and connection errors (default 5). */
  maxRetries?: number;
  /** First back-off in ms (default 500); doubles per retry, capped at maxDelayMs. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Per-request time-out in ms (default 60 000). */
  timeoutMs?: number;
  /** Injected for tests. */
  create?: CreateEmbeddings;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

const KNOWN_DIMENSIONS: Record<string, number> = {
  'text-embedding-3-small': 1536,
  'text-embedding-3-large': 3072,
  'text-embedding-ada-002': 1536,
};

interface ErrorLike {
  status?: number;
  headers?: { get?: (name: string) => string | null } | Record<string, string>;
  name?: string;
}

/** Status of an error from the client, or undefined for network errors. */
function statusOf(err: unknown): number | undefined {
  const s = (err as ErrorLike | null)?.status;
  return typeof s === 'number' ? s : undefined;
}

function isRetryable(err: unknown): boolean {
  // openai v6: connection failures and time-outs (APIConnectionTimeoutError extends it); `name` is not set on them.
  if (err instanceof APIConnectionError) return true;
  const status = statusOf(err);
  if (status === undefined) {
    const name = (err as ErrorLike | null)?.name ?? '';
    return name === 'APIConnectionError' || name === 'APIConnectionTimeoutError' || name === 'FetchError';
  }
  return status === 429 || status === 408 || status >= 500;
}

/** Server-requested delay in ms, if any: `retry-after-ms` (OpenAI's), else `Retry-After` in seconds or as an HTTP date. */
function retryAfterMs(err: unknown, now = Date.now()): number | undefined {
  const h = (err as ErrorLike | null)?.headers;
  if (!h) return undefined;
  const header = (name: string): string | undefined => {
    const raw = typeof (h as { get?: unknown }).get === 'function' ? (h as { get: (n: string) => string | null }).get(name) : (h as Record<string, string>)[name];
    return raw === null || raw === undefined ? undefined : String(raw).trim();
  };
  const ms = Number(header('retry-after-ms') ?? NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const raw = header('retry-after');
  if (raw === undefined || raw === '') return undefined;
  const secs = Number(raw);
  if (Number.isFinite(secs) && secs >= 0) return secs * 1000;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * `openai` embedding provider (also any OpenAI-compatible server through `baseURL`).
 * Splits inputs into batches, sends them one after another, and retries 429/5xx and
 * connection failures with exponential back-off and full jitter.
 */
export class OpenAIEmbeddings implements EmbeddingProvider {
  readonly modelId: string;
  readonly dimensions: number;
  private readonly model: string;
  private readonly requestDimensions?: number;
  private readonly batchSize: number;
  private readonly maxRetries: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly create: CreateEmbeddings;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;

  constructor(options: OpenAIEmbeddingsOptions = {}) {
    this.model = options.model ?? 'text-embedding-3-small';
    this.requestDimensions = options.dimensions;
    const dimensions = options.dimensions ?? KNOWN_DIMENSIONS[this.model];
    if (dimensions === undefined || !Number.isInteger(dimensions) || dimensions <= 0) {
      throw new Error(`the dimensions of embedding model ${this.model} are not known: set KB_OPENAI_DIMENSIONS to the length of its vectors (known models: ${Object.keys(KNOWN_DIMENSIONS).join(', ')})`);
    }
    this.dimensions = dimensions;
    this.modelId = `openai:${this.model}${options.dimensions ? `@${options.dimensions}` : ''}`;
    this.batchSize = Math.min(2048, Math.max(1, Math.floor(options.batchSize ?? 256)));
    this.maxRetries = Math.max(0, Math.floor(options.maxRetries ?? 5));
    this.baseDelayMs = options.baseDelayMs ?? 500;
    this.maxDelayMs = options.maxDelayMs ?? 20_000;
    this.sleep = options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.random = options.random ?? Math.random;
    if (options.create) {
      this.create = options.create;
    } else {
      const client = new OpenAI({ apiKey: options.apiKey, baseURL: options.baseURL, maxRetries: 0, timeout: options.timeoutMs ?? 60_000 });
      this.create = (req) => client.embeddings.create({ ...req, encoding_format: 'float' });
    }
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.batchSize) {
      // The API rejects empty strings.
      const input = texts.slice(i, i + this.batchSize).map((t) => (t.length === 0 ? ' ' : t));
      out.push(...(await this.embedBatch(input)));
    }
    return out;
  }

  private async embedBatch(input: string[]): Promise<Float32Array[]> {
    const request: EmbeddingsRequest = { model: this.model, input };
    if (this.requestDimensions) request.dimensions = this.requestDimensions;
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await this.create(request);
        const vectors = new Array<Float32Array | undefined>(input.length);
        for (const d of res.data) vectors[d.index] = unitVector(d.embedding);
        if (vectors.some((v) => v === undefined) || res.data.length !== input.length) {
          throw new Error(`embedding response has ${res.data.length} vectors for ${input.length} inputs`);
        }
        return vectors as Float32Array[];
      } catch (err) {
        if (attempt >= this.maxRetries || !isRetryable(err)) throw err;
        const backoff = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** attempt);
        const jittered = this.random() * backoff;
        await this.sleep(Math.min(this.maxDelayMs, Math.max(jittered, retryAfterMs(err) ?? 0)));
      }
    }
  }

  async close(): Promise<void> {
    // Stateless HTTP client: nothing to release.
  }
}
