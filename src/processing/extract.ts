import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import { compiledPath } from '../util/paths';
import type { Chunk, ChunkOptions } from './chunker';
import type { DocumentKind } from './detectType';

/**
 * Text extraction, run off the main event loop in a worker thread (compiled JS at
 * `compiledPath('src/processing/extractWorker')`) that extracts the file and streams
 * sections back; a time-out terminates the worker, and a crash or runaway memory inside it
 * (hostile or corrupt file) becomes a typed ExtractionError, never a crash or hang of the
 * server. Asked to (`chunking`), the worker also cuts the text into chunks and counts its
 * tokens, so that work stays off the event loop too.
 *
 * Workers are reused only within one `isolationKey` (the processor passes the workspace),
 * and only after a job that ended well: a worker that timed out, was aborted, failed or
 * crashed is terminated. Starting a worker and warming pdf.js up in it cost more than
 * parsing a 20-page PDF (about 0.7 s of CPU against 0.2 s when warm), so a warm worker of the
 * same workspace is kept for the next document (at most MAX_IDLE_WORKERS idle, each for
 * IDLE_WORKER_MS, at most JOBS_PER_WORKER jobs). Without an `isolationKey` every call has a
 * worker of its own, as before. One workspace's file never runs in a worker another
 * workspace's file ran in.
 */

export interface ExtractedSection {
  text: string;
  /** 1-based page number (PDF). */
  page?: number;
  /** Nearest heading path, e.g. "Install > Linux" (Markdown, .docx). */
  section?: string;
}

export interface ExtractedText {
  /** Empty with `eventParts` (the text is in `textParts` then). */
  sections: ExtractedSection[];
  /** With `chunking`: the chunks of the sections, in order (in `chunkBatches` with `eventParts`), and the tokens of their text. */
  chunks?: Chunk[];
  tokenCount?: number;
  /** With `eventParts`: the sections as the DocumentTextExtracted events' parts (`textExtractedParts`). */
  textParts?: ExtractedPiece[][];
  /** With `eventParts`: the chunks as the DocumentChunked events' batches (`chunkBatches`). */
  chunkBatches?: Chunk[][];
  /** With `eventParts`: UTF-8 bytes of the sections joined by blank lines. */
  sizeBytes?: number;
}

/** A piece of a section (`continued` after the first piece of a long section). */
export interface ExtractedPiece extends ExtractedSection {
  continued?: boolean;
}

/** How the worker cuts the text and chunks into events' payloads (see eventParts.ts). */
export interface EventPartsOptions {
  /** Bytes of JSON per event's payload (EVENT_PAYLOAD_BUDGET). */
  budget: number;
  /** Chunks per DocumentChunked event at most. */
  maxChunks: number;
}

/** EXTRACTION_LIMIT_EXCEEDED: the file passed one of the ExtractionLimits (its message names the setting). */
export type ExtractionErrorCode = 'NO_TEXT' | 'ENCRYPTED' | 'CORRUPT' | 'TIMEOUT' | 'EXTRACTION_LIMIT_EXCEEDED';

export class ExtractionError extends Error {
  constructor(
    readonly code: ExtractionErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ExtractionError';
  }
}

/**
 * Bounds on what one extraction may decompress, load and produce. The worker's heap limit
 * does not cover buffers outside the JS heap (inflated ZIP entries, file data), so these are
 * checked before the work, and again while it is done.
 */
export interface ExtractionLimits {
  /**
   * KB_MAX_EXTRACTED_BYTES: the UTF-8 bytes of extracted text (any type), and the bytes a
   * package may decompress to (.docx: the sum of the entries' uncompressed sizes, declared
   * and actual) or a legacy .doc may load.
   */
  maxExtractedBytes: number;
  /** KB_MAX_ZIP_ENTRIES: entries in a .docx package's central directory. */
  maxZipEntries: number;
  /** KB_MAX_PDF_PAGES: pages of a PDF. */
  maxPdfPages: number;
  /**
   * KB_MAX_CHUNKS_PER_DOCUMENT: chunks of one document, counted as they are made (each costs an
   * embedding, rows and index entries). Ordinary prose gives about 1,400 chunks per MiB of text
   * (89,000 at the 64 MiB text bound), CJK text about 2,100 (133,000); a file of tiny headings
   * gives one chunk per heading (2 MB of `# a` lines: 349,525).
   */
  maxChunks: number;
}

export const DEFAULT_EXTRACTION_LIMITS: Readonly<ExtractionLimits> = {
  maxExtractedBytes: 64 * 1024 * 1024,
  maxZipEntries: 5000,
  maxPdfPages: 5000,
  maxChunks: 200_000,
};

export interface ExtractOptions {
  /** The worker is terminated and the call fails with TIMEOUT after this many milliseconds. */
  timeoutMs: number;
  /** Heap limit of the worker (default 512 MB); past it the call fails with CORRUPT. */
  maxHeapMb?: number;
  /** Default DEFAULT_EXTRACTION_LIMITS; past one, the call fails with EXTRACTION_LIMIT_EXCEEDED. */
  limits?: Partial<ExtractionLimits>;
  /** Aborting terminates the worker; the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** The worker also chunks the text (see chunker.ts) and counts its tokens. */
  chunking?: ChunkOptions;
  /** With `chunking`: the worker hands the text and chunks over already cut into events' payloads. */
  eventParts?: EventPartsOptions;
  /** Workers may be reused for calls with the same key (a workspace id); none when absent. */
  isolationKey?: string;
}

export const DEFAULT_EXTRACT_TIMEOUT_MS = 120_000;
export const DEFAULT_EXTRACT_MAX_HEAP_MB = 512;

/** Data given to the worker. */
export interface ExtractJob {
  filePath: string;
  kind: DocumentKind;
  limits: ExtractionLimits;
  chunking?: ChunkOptions;
  eventParts?: EventPartsOptions;
}

/**
 * Messages to the worker: one job at a time, the next only after `done`. `warm` (a spare
 * worker, before any job) runs a built-in sample through the job's options and answers `warmed`.
 */
export type ExtractWorkerRequest = { type: 'job'; job: ExtractJob } | { type: 'warm'; job: ExtractJob };

/** Messages from the worker. */
export type ExtractWorkerMessage =
  | { type: 'sections'; sections: ExtractedSection[] }
  | { type: 'chunks'; chunks: Chunk[] }
  | { type: 'textPart'; part: ExtractedPiece[] }
  | { type: 'chunkBatch'; chunks: Chunk[] }
  | { type: 'done'; tokenCount?: number; sizeBytes?: number }
  | { type: 'warming'; message: ExtractWorkerMessage }
  | { type: 'warmed' }
  | { type: 'error'; code: ExtractionErrorCode; message: string };

export const EXTRACT_WORKER_PATH: string = compiledPath('src/processing/extractWorker');

const KINDS: readonly DocumentKind[] = ['pdf', 'docx', 'doc', 'txt', 'md'];

/**
 * Extracts the text of `filePath` as sections (one per PDF page; per heading for Markdown
 * and .docx; text files may arrive in several pieces of one section). Whitespace is
 * normalised. Rejects with ExtractionError (NO_TEXT, ENCRYPTED, CORRUPT, TIMEOUT,
 * EXTRACTION_LIMIT_EXCEEDED); a missing file or unbuilt worker rejects with a plain Error.
 */
export async function extractText(filePath: string, kind: DocumentKind, opts: ExtractOptions): Promise<ExtractedText> {
  if (!KINDS.includes(kind)) throw new TypeError(`unsupported kind: ${String(kind)}`);
  if (!(opts.timeoutMs > 0)) throw new RangeError(`timeoutMs must be positive, got ${opts.timeoutMs}`);
  await stat(filePath); // ENOENT etc. are the caller's problem, not the file's
  if (!existsSync(EXTRACT_WORKER_PATH)) {
    throw new Error(`extraction worker not built (${EXTRACT_WORKER_PATH}); run \`npm run build\``);
  }
  const limits: ExtractionLimits = { ...DEFAULT_EXTRACTION_LIMITS, ...opts.limits };
  const job = jobOf(filePath, kind, limits, opts);
  const maxHeapMb = opts.maxHeapMb ?? DEFAULT_EXTRACT_MAX_HEAP_MB;
  const { signal } = opts;
  signal?.throwIfAborted();

  return new Promise<ExtractedText>((resolve, reject) => {
    const sections: ExtractedSection[] = [];
    const chunks: Chunk[] = [];
    const textParts: ExtractedPiece[][] = [];
    const chunkBatches: Chunk[][] = [];
    let textBytes = 0;
    let settled = false;
    const pooled = takeWorker(opts.isolationKey, maxHeapMb);
    const { worker } = pooled;

    const finish = (err: Error | undefined, done?: { tokenCount?: number; sizeBytes?: number }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
      if (pooled.replacesSpare) {
        pooled.replacesSpare = false;
        const asked = keepSpare;
        if (asked !== undefined) setImmediate(() => void (keepSpare === asked && keepSpareExtractionWorker(asked)));
      }
      if (err) {
        void worker.terminate();
        reject(err);
        return;
      }
      releaseWorker(pooled);
      const tokenCount = done?.tokenCount ?? 0;
      if (job.eventParts) resolve({ sections, textParts, chunkBatches, tokenCount, sizeBytes: done?.sizeBytes ?? 0 });
      else resolve(job.chunking ? { sections, chunks, tokenCount } : { sections });
    };
    const timer = setTimeout(() => {
      finish(new ExtractionError('TIMEOUT', `extraction of the ${kind} file did not finish within ${opts.timeoutMs} ms and was stopped`));
    }, opts.timeoutMs);
    const onAbort = (): void => finish(signal?.reason instanceof Error ? signal.reason : new Error('extraction aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });

    const onMessage = (msg: ExtractWorkerMessage): void => {
      if (settled) return;
      if (msg.type === 'sections' || msg.type === 'textPart') {
        const received = msg.type === 'sections' ? msg.sections : msg.part;
        for (const s of received) {
          // The worker bounds its text too; this side does not trust it to.
          textBytes += Buffer.byteLength(s.text, 'utf8');
          if (textBytes > limits.maxExtractedBytes) {
            finish(textLimitError(kind, limits.maxExtractedBytes));
            return;
          }
        }
        if (msg.type === 'sections') for (const s of msg.sections) sections.push(s);
        else textParts.push(msg.part);
      } else if (msg.type === 'chunks') {
        for (const c of msg.chunks) chunks.push(c);
      } else if (msg.type === 'chunkBatch') {
        chunkBatches.push(msg.chunks);
      } else if (msg.type === 'done') finish(undefined, msg);
      else if (msg.type === 'error') finish(new ExtractionError(msg.code, msg.message));
      // ('warming', 'warmed': the warm-up of a spare taken before it finished, not this job's)
    };
    const onError = (err: Error & { code?: string }): void => {
      finish(
        new ExtractionError(
          'CORRUPT',
          err.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? `the ${kind} file needed more than ${maxHeapMb} MB of memory to extract and was rejected`
            : `the ${kind} file could not be read: ${err.message}`,
        ),
      );
    };
    const onExit = (code: number): void => {
      finish(new ExtractionError('CORRUPT', `extraction of the ${kind} file stopped unexpectedly (exit code ${code})`));
    };
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    worker.postMessage({ type: 'job', job } satisfies ExtractWorkerRequest);
  });
}

/** The worker's job: `eventParts` only with `chunking`. */
function jobOf(filePath: string, kind: DocumentKind, limits: ExtractionLimits, o: { chunking?: ChunkOptions; eventParts?: EventPartsOptions }): ExtractJob {
  return { filePath, kind, limits, ...(o.chunking ? { chunking: o.chunking, ...(o.eventParts ? { eventParts: o.eventParts } : {}) } : {}) };
}

// ---- the workers --------------------------------------------------------------------------------

/** Idle workers kept for reuse (all keys together), how long, and how many jobs one may serve. */
export const MAX_IDLE_WORKERS = 2;
const IDLE_WORKER_MS = 30_000;
const JOBS_PER_WORKER = 100;

interface PooledWorker {
  worker: Worker;
  key: string | undefined;
  maxHeapMb: number;
  jobs: number;
  idleTimer?: NodeJS.Timeout;
  /** It was the spare: a new spare is started once its job ends (starting a thread meanwhile would slow that job down). */
  replacesSpare?: boolean;
  /** While idle: drops it from the pool if it dies. */
  onIdleExit?: () => void;
}

const idleWorkers: PooledWorker[] = [];
/** A started worker that has run no job yet (so any key may have it), kept while `keepSpare`. */
let spare: PooledWorker | undefined;
/** What `keepSpareExtractionWorker` was asked for (undefined: no spare kept). */
let keepSpare: SpareOptions | undefined;

/** The spare worker's heap, and the options of the jobs it will get (to warm their paths up before the first). */
export interface SpareOptions {
  maxHeapMb?: number;
  /** The options the processor's jobs use: the spare runs a built-in sample through them first. */
  warmUp?: { limits?: Partial<ExtractionLimits>; chunking?: ChunkOptions; eventParts?: EventPartsOptions };
}

/**
 * Keeps one started worker in reserve (it has run no job, so it may go to any workspace): a
 * workspace's first document does not wait for a thread to start. With `warmUp`, the spare
 * first runs a built-in sample (no file, no tenant's data) through the jobs' options, so that
 * the first document of a workspace is not the one that compiles the worker's code (a first
 * job in a fresh worker took about four times as long as the next). Taken, it is replaced
 * once its job has ended. Until `closeIdleExtractionWorkers`. Resolves once this spare is warm (at
 * once without `warmUp`; a warm-up that fails or a spare that dies resolves too: the next job
 * is just slower).
 */
export function keepSpareExtractionWorker(options: SpareOptions = {}): Promise<void> {
  keepSpare = options;
  if (spare || !existsSync(EXTRACT_WORKER_PATH)) return Promise.resolve();
  spareWarming = startSpare(options);
  return spareWarming;
}

/** Settles once the spare started last is warm (or dead); at once when none was started. */
export function spareExtractionWorkerWarm(): Promise<void> {
  return spareWarming;
}

let spareWarming: Promise<void> = Promise.resolve();

function startSpare(options: SpareOptions): Promise<void> {
  const pooled = spawnWorker(undefined, options.maxHeapMb ?? DEFAULT_EXTRACT_MAX_HEAP_MB);
  pooled.worker.unref();
  pooled.onIdleExit = () => {
    if (spare === pooled) spare = undefined;
  };
  pooled.worker.once('exit', pooled.onIdleExit);
  pooled.jobs = 0;
  spare = pooled;
  const { warmUp } = options;
  if (!warmUp) return Promise.resolve();
  const { worker } = pooled;
  return new Promise<void>((resolve) => {
    const onMessage = (msg: ExtractWorkerMessage): void => {
      if (msg.type === 'warmed') settle();
    };
    const settle = (): void => {
      worker.off('message', onMessage);
      worker.off('exit', settle);
      resolve();
    };
    worker.on('message', onMessage);
    worker.once('exit', settle);
    const job = jobOf('', 'md', { ...DEFAULT_EXTRACTION_LIMITS, ...warmUp.limits }, warmUp);
    worker.postMessage({ type: 'warm', job } satisfies ExtractWorkerRequest);
  });
}

function takeWorker(key: string | undefined, maxHeapMb: number): PooledWorker {
  const i = key === undefined ? -1 : idleWorkers.findIndex((w) => w.key === key && w.maxHeapMb === maxHeapMb);
  if (i >= 0) {
    const [pooled] = idleWorkers.splice(i, 1);
    clearTimeout(pooled.idleTimer);
    if (pooled.onIdleExit) pooled.worker.off('exit', pooled.onIdleExit);
    pooled.onIdleExit = undefined;
    pooled.worker.ref();
    pooled.jobs++;
    return pooled;
  }
  if (spare && spare.maxHeapMb === maxHeapMb && spare.worker.threadId !== -1) {
    const pooled = spare;
    spare = undefined;
    if (pooled.onIdleExit) pooled.worker.off('exit', pooled.onIdleExit);
    pooled.onIdleExit = undefined;
    pooled.worker.ref();
    pooled.key = key;
    pooled.jobs = 1;
    pooled.replacesSpare = true;
    return pooled;
  }
  return spawnWorker(key, maxHeapMb);
}

function spawnWorker(key: string | undefined, maxHeapMb: number): PooledWorker {
  const worker = new Worker(EXTRACT_WORKER_PATH, {
    resourceLimits: { maxOldGenerationSizeMb: maxHeapMb, maxYoungGenerationSizeMb: 64 },
    stdout: true, // keep library chatter (pdf.js warnings) out of the server's output
    stderr: true,
  });
  worker.stdout.resume();
  worker.stderr.resume();
  return { worker, key, maxHeapMb, jobs: 1 };
}

/** After a job that ended well: kept for the next job of the same key, or terminated. */
function releaseWorker(pooled: PooledWorker): void {
  if (pooled.key === undefined || pooled.jobs >= JOBS_PER_WORKER) {
    void pooled.worker.terminate();
    return;
  }
  if (idleWorkers.length >= MAX_IDLE_WORKERS) void (idleWorkers.shift() as PooledWorker).worker.terminate(); // the oldest idle one
  pooled.worker.unref(); // an idle worker never keeps the process alive
  pooled.onIdleExit = () => dropIdle(pooled);
  pooled.worker.once('exit', pooled.onIdleExit);
  pooled.idleTimer = setTimeout(() => {
    dropIdle(pooled);
    void pooled.worker.terminate();
  }, IDLE_WORKER_MS);
  pooled.idleTimer.unref();
  idleWorkers.push(pooled);
}

function dropIdle(pooled: PooledWorker): void {
  const i = idleWorkers.indexOf(pooled);
  if (i >= 0) idleWorkers.splice(i, 1);
  clearTimeout(pooled.idleTimer);
}

/** The idle workers: their key and how many jobs each has served (for tests and diagnostics); the spare has key undefined and 0 jobs. */
export function idleExtractionWorkers(): { key: string | undefined; jobs: number }[] {
  return [...idleWorkers.map((w) => ({ key: w.key, jobs: w.jobs })), ...(spare ? [{ key: undefined, jobs: 0 }] : [])];
}

/**
 * Terminates the idle workers and the spare, and stops keeping one (at shutdown). With `keys`,
 * only the idle workers of those keys (a processor that does not own the spare, such as the
 * start-up rehearsal's, leaves the rest of the pool as it is).
 */
export async function closeIdleExtractionWorkers(keys?: ReadonlySet<string>): Promise<void> {
  if (keys) {
    const mine = idleWorkers.filter((w) => w.key !== undefined && keys.has(w.key));
    for (const w of mine) dropIdle(w);
    await Promise.all(mine.map((w) => w.worker.terminate()));
    return;
  }
  keepSpare = undefined;
  const all = idleWorkers.splice(0);
  if (spare) all.push(spare);
  spare = undefined;
  await Promise.all(
    all.map((w) => {
      clearTimeout(w.idleTimer);
      return w.worker.terminate();
    }),
  );
}

/** The error for extracted text over KB_MAX_EXTRACTED_BYTES (worker and parent use the same words). */
export function textLimitError(kind: DocumentKind, maxBytes: number): ExtractionError {
  return new ExtractionError(
    'EXTRACTION_LIMIT_EXCEEDED',
    `the ${kind} file's extracted text is larger than ${maxBytes} bytes (KB_MAX_EXTRACTED_BYTES); split the document or raise the limit`,
  );
}
