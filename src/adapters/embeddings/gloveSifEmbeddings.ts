import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import type { EmbeddingProvider } from '../../ports/embeddings';
import { compiledPath } from '../../util/paths';
import { ensureGloveBinary, parseGloveBinaryAsync, readGloveVocabulary, type GloveHeader, type GloveVectors } from './gloveVectors';

export const GLOVE_SIF_MODEL_ID = 'local:glove-sif-100d';

export interface GloveSifOptions {
  /** Directories that may hold the converted vectors, first writable one caches them. */
  cacheDirs: string[];
  /** SIF smoothing `a` in a/(a + p(w)) (default 1e-4: measured best on Cranfield among 1e-5…3e-3). */
  a?: number;
  /** Remove the common component (default true). */
  removeComponent?: boolean;
  /** Longest text embedded, in characters (default 8000). */
  maxChars?: number;
  /**
   * Embed documents' texts (`embedDocuments`) on a thread of its own that shares the
   * vectors' memory (default false: on the calling thread). Queries (`embed`) stay on the
   * calling thread, where one takes about 0.1 ms.
   */
  ingestThread?: boolean;
  log?: (msg: string) => void;
}

export const GLOVE_THREAD_PATH: string = compiledPath('src/adapters/embeddings/gloveThread');

/** What the ingest thread (gloveThread.ts) is started with. */
export interface GloveThreadData {
  header: GloveHeader;
  scales: Float32Array;
  rows: Int8Array;
  weight: Float32Array;
  component?: Float32Array;
  vocabulary: string;
  maxChars: number;
}

/** To the thread: texts to embed. From it: `ready` once, then each request's vectors, `dims` floats per text, one buffer. */
export type GloveThreadRequest = { id: number; texts: string[] };
export type GloveThreadAnswer = { type: 'ready' } | { type: 'vectors'; id: number; vectors: Float32Array } | { type: 'error'; id: number; message: string };


const DEFAULT_A = 1e-4;
/** Sentence length of the random text the common component is computed for. */
const COMPONENT_SENTENCE_WORDS = 20;
/** Words (most frequent first) that enter the component: 100k carry ~93% of the Zipf mass. */
const COMPONENT_VOCABULARY = 100_000;
/** Texts embedded between two yields to the event loop. */
const SLICE = 64;

const TOKEN = /[\p{L}\p{N}]+(?:['’.\-_][\p{L}\p{N}]+)*/gu;

export interface SifModel {
  vectors: GloveVectors;
  /** SIF weight by rank: a / (a + p(rank)), p from Zipf's law over the vocabulary. */
  weight: Float32Array;
  /** Unit common component (removed from every embedding), or undefined. */
  component?: Float32Array;
}

/**
 * Builds the SIF weights and the common component of a vocabulary.
 *
 * p(w): the vocabulary is in corpus-frequency order, so p(rank r) = 1 / ((r + 1) · H_N),
 * Zipf's law normalised over N words (H_N the harmonic number).
 *
 * Common component: SIF (Arora et al., 2017) removes the first principal component of the
 * sentence embeddings of a corpus. So that a vector never depends on which documents were
 * indexed before it (every stored vector must stay valid), the corpus here is fixed: random
 * 20-word sentences drawn from the same Zipf distribution. Their uncentred second moment
 * has a closed form, E[s sᵀ] = (1 − 1/n)·μμᵀ + (1/n)·Σ p(w)·x_w x_wᵀ with x_w = weight(w)·v_w
 * and μ = Σ p(w)·x_w, computed over the 100k most frequent words; its top eigenvector
 * (power iteration) is the component.
 */
export function buildSifModel(vectors: GloveVectors, a: number, removeComponent: boolean, knownComponent?: Float32Array): SifModel {
  const { count, dims } = vectors.header;
  let harmonic = 0;
  for (let r = 1; r <= count; r++) harmonic += 1 / r;
  const weight = new Float32Array(count);
  for (let r = 0; r < count; r++) {
    const p = 1 / ((r + 1) * harmonic);
    weight[r] = a / (a + p);
  }
  if (!removeComponent) return { vectors, weight };
  if (knownComponent && knownComponent.length === dims) return { vectors, weight, component: knownComponent };
  const n = Math.min(count, COMPONENT_VOCABULARY);
  const mu = new Float64Array(dims);
  const second = new Float64Array(dims * dims);
  const x = new Float64Array(dims);
  for (let r = 0; r < n; r++) {
    const p = 1 / ((r + 1) * harmonic);
    const s = weight[r] * vectors.scales[r];
    const base = r * dims;
    for (let d = 0; d < dims; d++) {
      x[d] = s * vectors.rows[base + d];
      mu[d] += p * x[d];
    }
    for (let i = 0; i < dims; i++) {
      const pi = p * x[i];
      const rowOff = i * dims;
      for (let j = i; j < dims; j++) second[rowOff + j] += pi * x[j];
    }
  }
  const k = COMPONENT_SENTENCE_WORDS;
  const m = new Float64Array(dims * dims);
  for (let i = 0; i < dims; i++) {
    for (let j = i; j < dims; j++) {
      const v = (1 - 1 / k) * mu[i] * mu[j] + second[i * dims + j] / k;
      m[i * dims + j] = v;
      m[j * dims + i] = v;
    }
  }
  let c = new Float64Array(dims).fill(1 / Math.sqrt(dims));
  for (let it = 0; it < 200; it++) {
    const next = new Float64Array(dims);
    for (let i = 0; i < dims; i++) {
      let s = 0;
      for (let j = 0; j < dims; j++) s += m[i * dims + j] * c[j];
      next[i] = s;
    }
    let norm = 0;
    for (let i = 0; i < dims; i++) norm += next[i] * next[i];
    norm = Math.sqrt(norm);
    let delta = 0;
    for (let i = 0; i < dims; i++) {
      next[i] /= norm;
      delta += Math.abs(next[i] - c[i]);
    }
    c = next;
    if (delta < 1e-9) break;
  }
  return { vectors, weight, component: Float32Array.from(c) };
}

/** SIF embedding of one text (unit length; zero when no word is known). */
export function sifEmbed(model: SifModel, text: string, out: Float32Array): Float32Array {
  const { rank, rows, scales, header } = model.vectors;
  const dims = header.dims;
  out.fill(0);
  const lower = text.toLowerCase();
  TOKEN.lastIndex = 0;
  let m: RegExpExecArray | null;
  const add = (r: number): void => {
    const s = model.weight[r] * scales[r];
    const base = r * dims;
    for (let d = 0; d < dims; d++) out[d] += s * rows[base + d];
  };
  while ((m = TOKEN.exec(lower)) !== null) {
    const r = rank.get(m[0]);
    if (r !== undefined) {
      add(r);
      continue;
    }
    // "lift-to-drag", "o'brien": the parts when the whole is unknown.
    if (m[0].length > 1) {
      for (const part of m[0].split(/['’.\-_]/)) {
        const pr = rank.get(part);
        if (pr !== undefined) add(pr);
      }
    }
  }
  if (model.component) {
    let dot = 0;
    for (let d = 0; d < dims; d++) dot += out[d] * model.component[d];
    for (let d = 0; d < dims; d++) out[d] -= dot * model.component[d];
  }
  let s = 0;
  for (let d = 0; d < dims; d++) s += out[d] * out[d];
  if (s > 0) {
    const inv = 1 / Math.sqrt(s);
    for (let d = 0; d < dims; d++) out[d] *= inv;
  }
  return out;
}

/**
 * `glove` embedding provider: GloVe 100-d word vectors averaged with SIF weights, common
 * component removed. Runs on the calling thread (about 75 µs per 200-token chunk),
 * yielding to the event loop every 64 texts. The vectors are converted once per machine
 * (see gloveVectors.ts) and loaded on first use or by `warmup()`.
 *
 * With `ingestThread`, `embedDocuments` (the document processor's batches) runs on a worker
 * thread instead: the same function over the same rows and scales (SharedArrayBuffers, not a
 * second copy; the thread builds only its own vocabulary map, ~30 MB), so the vectors are
 * the same bit for bit. A thread that fails is replaced at the next call; a thread that
 * cannot start (not built) leaves the work on the calling thread.
 */
export class GloveSifEmbeddings implements EmbeddingProvider {
  /** `local:glove-sif-100d`, with the parameters appended when they are not the defaults. */
  readonly modelId: string;
  readonly dimensions = 100;
  private model?: Promise<SifModel>;
  private closed = false;
  private readonly maxChars: number;
  private thread?: Promise<Worker | undefined>;
  /** The ingest thread once it has answered `ready` (until then, documents are embedded here). */
  private readyThread?: Worker;
  private readonly waiting = new Map<number, { resolve: (v: Float32Array) => void; reject: (err: Error) => void }>();
  private nextId = 1;

  constructor(private readonly options: GloveSifOptions) {
    this.maxChars = Math.max(1, Math.floor(options.maxChars ?? 8000));
    const a = options.a ?? DEFAULT_A;
    this.modelId = `${GLOVE_SIF_MODEL_ID}${a !== DEFAULT_A ? `@a=${a}` : ''}${options.removeComponent === false ? '@no-pc' : ''}`;
  }

  private load(): Promise<SifModel> {
    this.model ??= (async () => {
      const file = await ensureGloveBinary(this.options.cacheDirs, this.options.log);
      const bytes = await fs.readFile(file);
      const vectors = await parseGloveBinaryAsync(bytes, { shared: this.options.ingestThread === true });
      const a = this.options.a ?? DEFAULT_A;
      // The component takes ~1 s of CPU to compute: kept beside the vectors, per `a`.
      const componentFile = `${file}.sif-component-a${a}.json`;
      const known = await fs.readFile(componentFile, 'utf8').then((t) => Float32Array.from(JSON.parse(t) as number[]), () => undefined);
      const model = buildSifModel(vectors, a, this.options.removeComponent ?? true, known);
      if (!known && model.component) {
        const tmp = `${componentFile}.${process.pid}.tmp`;
        await fs.writeFile(tmp, JSON.stringify(Array.from(model.component)));
        await fs.rename(tmp, componentFile);
      }
      return model;
    })();
    this.model.catch(() => (this.model = undefined)); // a later call retries
    return this.model;
  }

  /**
   * Loads the model. With `documents` (a process that processes documents), also starts the
   * ingest thread and embeds a sample on it, so that the first document's batch neither starts
   * it nor is the first to run its code; otherwise the thread starts with the first documents'
   * batch (they do not wait for it).
   */
  async warmup(options?: { documents?: boolean }): Promise<void> {
    await this.load();
    if (!options?.documents || !this.options.ingestThread) return;
    if (!(await this.ingestWorker())) return;
    await this.embedDocuments(Array.from({ length: 8 }, (_, i) => `Warm-up sample ${i}: documents are split into chunks, embedded and indexed for search.`));
  }

  /** Starts the ingest thread (if configured) and waits until it is ready. */
  async startIngestThread(): Promise<void> {
    if (this.options.ingestThread) await this.ingestWorker();
  }

  /** The ingest thread, started once the model is loaded; undefined when it cannot run. */
  private ingestWorker(): Promise<Worker | undefined> {
    this.thread ??= (async () => {
      const model = await this.load();
      if (!existsSync(GLOVE_THREAD_PATH)) {
        this.options.log?.(`GloVe ingest thread not built (${GLOVE_THREAD_PATH}): documents are embedded on the calling thread`);
        return undefined;
      }
      const { header, scales, rows } = model.vectors;
      // The vocabulary from the file (its part only, read again: not kept on this thread; the rows are shared).
      const vocabulary = await readGloveVocabulary(await ensureGloveBinary(this.options.cacheDirs, this.options.log));
      const data: GloveThreadData = { header, scales, rows, weight: model.weight, vocabulary, maxChars: this.maxChars, ...(model.component ? { component: model.component } : {}) };
      // A small young generation: the thread allocates little (one batch's vectors) besides its map.
      const worker = new Worker(GLOVE_THREAD_PATH, { workerData: data, resourceLimits: { maxYoungGenerationSizeMb: 4 } });
      worker.unref(); // kept alive only while a batch waits (see embedDocuments)
      await new Promise<void>((resolve, reject) => {
        const onReady = (m: GloveThreadAnswer): void => {
          if (m.type !== 'ready') return;
          worker.off('message', onReady);
          resolve();
        };
        worker.on('message', onReady);
        worker.once('error', reject);
        worker.once('exit', (code) => reject(new Error(`GloVe ingest thread exited (code ${code})`)));
      });
      worker.removeAllListeners('error');
      worker.removeAllListeners('exit');
      worker.on('message', (m: GloveThreadAnswer) => {
        if (m.type === 'ready') return;
        const w = this.waiting.get(m.id);
        if (!w) return;
        this.waiting.delete(m.id);
        if (this.waiting.size === 0) worker.unref();
        if (m.type === 'vectors') w.resolve(m.vectors);
        else w.reject(new Error(`GloVe ingest thread: ${m.message}`));
      });
      const fail = (err: Error): void => {
        this.thread = undefined; // the next call starts a new one
        if (this.readyThread === worker) this.readyThread = undefined;
        for (const w of this.waiting.values()) w.reject(err);
        this.waiting.clear();
      };
      worker.on('error', fail);
      worker.on('exit', (code) => fail(new Error(`GloVe ingest thread exited (code ${code})`)));
      this.readyThread = worker;
      return worker;
    })();
    this.thread.catch(() => (this.thread = undefined)); // a later call tries again
    return this.thread;
  }

  /**
   * Texts of documents (chunks to index): on the ingest thread when it is ready, else as
   * `embed` (while the thread starts, right after start-up or after a failure, batches do not
   * wait for it).
   */
  async embedDocuments(texts: string[]): Promise<Float32Array[]> {
    if (this.closed) throw new Error('embedding provider is closed');
    if (!this.options.ingestThread || texts.length === 0) return this.embed(texts);
    const worker = this.readyThread;
    if (!worker) {
      this.ingestWorker().catch(() => undefined); // started (once) for the next batches
      return this.embed(texts);
    }
    // Gone before its exit was handled: fail this batch (the caller retries), never wait on it.
    if (worker.threadId === -1) throw new Error('GloVe ingest thread exited');
    const id = this.nextId++;
    const all = await new Promise<Float32Array>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, texts } satisfies GloveThreadRequest);
    });
    const dims = this.dimensions;
    return texts.map((_, i) => all.slice(i * dims, (i + 1) * dims));
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (this.closed) throw new Error('embedding provider is closed');
    const model = await this.load();
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i++) {
      if (i > 0 && i % SLICE === 0) await new Promise((r) => setImmediate(r));
      const t = texts[i].length > this.maxChars ? texts[i].slice(0, this.maxChars) : texts[i];
      out.push(sifEmbed(model, t, new Float32Array(this.dimensions)));
    }
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.model = undefined;
    const thread = this.thread;
    this.thread = undefined;
    this.readyThread = undefined;
    const worker = await thread?.catch(() => undefined);
    for (const w of this.waiting.values()) w.reject(new Error('embedding provider is closed'));
    this.waiting.clear();
    await worker?.terminate();
  }
}
