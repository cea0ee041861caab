import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { DomainError } from '../../domain/errors';
import { VectorModelChangedError } from '../../ports/searchIndex';
import type { ChunkVector, DocumentFields, IndexedChunk, SearchFilters, SearchHit, SearchIndex, SearchRequest, VectorModel, VectorModels } from '../../ports/searchIndex';
import { compiledPath } from '../../util/paths';
import type { EmbeddedSearchIndexOptions } from './embeddedSearchIndex';
import type { SearchWorkerData } from './searchWorker';
import type { IndexStats, WarmUpSample, WorkerReady, WorkerReply, WorkerRequest } from './searchWorkerProtocol';

const WORKER_PATH = compiledPath('src/adapters/embedded/searchWorker');

export interface WorkerSearchIndexOptions extends EmbeddedSearchIndexOptions {
  /** Calls waiting for the worker at most; past it a search is refused (503 SERVICE_UNAVAILABLE). Default 1024. */
  maxPending?: number;
  /** Told when the worker stopped unexpectedly and is being replaced. */
  onCrash?: (err: Error) => void;
  /** Worker script (tests); default the compiled `searchWorker`. */
  workerPath?: string;
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

/** Replacement of a crashed worker: first at once, then backing off to this (a worker that dies at start-up is not restarted in a tight loop). */
const MAX_RESTART_DELAY_MS = 5000;

/** A method call of the index, as sent to the worker (the id is added when sent). */
type Call = WorkerRequest extends infer R ? (R extends WorkerRequest ? Omit<R, 'id'> : never) : never;

/**
 * The embedded SearchIndex run in a worker thread: the same EmbeddedSearchIndex (one SQLite
 * file, FTS5, the int8 vector slab), opened in its own thread, so ranking (BM25 over FTS5,
 * the dense scan, fusion, feedback) and index updates no longer share the main thread with
 * HTTP, commands and the other projections: a search waits for other searches and index
 * updates only, never for a command, and commands never wait for a search. Answers are the
 * in-thread index's own (the same code, applying the same calls in the same order).
 *
 * In the worker, a search jumps the waiting index updates, the two taking turns while both
 * wait (a search waits for at most one update; updates are never starved). A worker that
 * dies (a bug, a native failure) is replaced: calls in flight fail (the projection retries its
 * batch; a search answers 500), later calls go to the new worker, which reopens the file. At
 * most `maxPending` calls wait; past it a search is refused with 503 (bounded memory).
 */
export class WorkerSearchIndex implements SearchIndex {
  private worker!: Worker;
  private ready!: Promise<IndexStats>;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /** Calls made and not answered yet (waiting for a worker or in it). */
  private inFlight = 0;
  private alive = false;
  private terminated = false;
  private checkpoint: number | undefined;
  private checkpointGeneration = 0;
  /** A worker has opened the index once: from then on a dead one is replaced. */
  private opened = false;
  private closed = false;
  private restarts = 0;
  private restartDelayMs = 0;
  private lastStats: IndexStats = { chunks: 0, dims: 0, vectorBytes: 0 };
  private readonly maxPending: number;

  private constructor(
    private readonly filePath: string,
    private readonly options: WorkerSearchIndexOptions,
  ) {
    this.maxPending = options.maxPending ?? 1024;
    this.spawn();
  }

  /** Starts the worker and waits until it has opened and loaded the index. */
  static async open(filePath: string, options: WorkerSearchIndexOptions = {}): Promise<WorkerSearchIndex> {
    const script = options.workerPath ?? WORKER_PATH;
    if (!existsSync(script)) throw new Error(`search index worker not built (${script}); run \`npm run build\` (or set KB_SEARCH_THREAD=main)`);
    const index = new WorkerSearchIndex(filePath, options);
    try {
      await index.ready;
    } catch (err) {
      await index.close();
      throw err;
    }
    return index;
  }

  /** The index's size as of the last start or `refreshStats()` (dims fix the embedding model at start-up). */
  stats(): IndexStats {
    return this.lastStats;
  }

  async refreshStats(): Promise<IndexStats> {
    this.lastStats = (await this.call({ method: 'stats', args: [] })) as IndexStats;
    return this.lastStats;
  }

  /** Workers started after a crash (tests, metrics). */
  get restartCount(): number {
    return this.restarts;
  }

  private spawn(): void {
    this.ready = this.startWorker();
    this.ready.catch(() => undefined);
  }

  /** Starts a worker; resolves once it has opened and loaded the index. */
  private startWorker(): Promise<IndexStats> {
    const { hybrid, ann } = this.options;
    const data: SearchWorkerData = { filePath: this.filePath, options: { ...(hybrid ? { hybrid } : {}), ...(ann ? { ann } : {}) } };
    const worker = new Worker(this.options.workerPath ?? WORKER_PATH, { workerData: data });
    this.worker = worker;
    this.alive = true;
    worker.on('error', () => undefined); // the exit that follows is handled below
    const ready = new Promise<IndexStats>((resolve, reject) => {
      worker.once('message', (m: WorkerReady) => {
        this.lastStats = m.stats;
        this.opened = true;
        this.restartDelayMs = 0;
        resolve(m.stats);
        worker.on('message', (reply: WorkerReply) => this.settle(reply));
      });
      worker.once('exit', (code) => reject(new Error(`search worker exited with code ${code} while opening ${this.filePath}`)));
    });
    worker.once('exit', (code) => {
      this.alive = false;
      const err = new Error(`search worker stopped (exit code ${code})`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      // A worker that never opened the index at start-up fails `open` instead (nothing to replace).
      if (this.closed || !this.opened) return;
      this.options.onCrash?.(err);
      this.restarts += 1;
      // Calls made meanwhile wait for the replacement.
      const delay = this.restartDelayMs;
      this.restartDelayMs = Math.min(MAX_RESTART_DELAY_MS, Math.max(100, delay * 2));
      this.ready = new Promise<void>((r) => setTimeout(r, delay)).then(() => {
        if (this.closed) throw new Error('search index is closed');
        return this.startWorker();
      });
      this.ready.catch(() => undefined);
    });
    return ready;
  }

  private settle(reply: WorkerReply): void {
    const p = this.pending.get(reply.id);
    if (!p) return;
    this.pending.delete(reply.id);
    if (reply.ok) p.resolve(reply.value);
    else if (reply.error.name === 'VectorModelChangedError' && reply.error.queryModel !== undefined) p.reject(new VectorModelChangedError(reply.error.queryModel, reply.error.activeModel));
    else p.reject(Object.assign(new Error(reply.error.message), { name: reply.error.name }));
  }

  private async call(c: Call): Promise<unknown> {
    if (this.closed) throw new Error('search index is closed');
    if (this.inFlight >= this.maxPending) throw new DomainError('SERVICE_UNAVAILABLE', 'Search is busy; retry shortly.');
    this.inFlight += 1;
    try {
      await this.ready;
      // A call made before `close` is still sent (close answers it first); none after the thread ends.
      if (this.terminated) throw new Error('search index is closed');
      const id = this.nextId++;
      return await new Promise((resolve, reject) => {
        this.pending.set(id, { resolve, reject });
        this.worker.postMessage({ ...c, id } as WorkerRequest);
      });
    } finally {
      this.inFlight -= 1;
    }
  }

  /** Whether a worker thread is running (false once closed). */
  get running(): boolean {
    return this.alive;
  }

  /**
   * Warms the thread's code up on a throwaway in-memory index of its own (searchWorker.ts,
   * `warmUp`): the live index is not touched. Queued as an index update.
   */
  async warmUp(sample: WarmUpSample): Promise<void> {
    await this.call({ method: 'warmUp', args: [sample] });
  }

  async upsertDocument(documentId: string, chunks: IndexedChunk[]): Promise<void> {
    await this.call({ method: 'upsertDocument', args: [documentId, chunks] });
  }

  async deleteDocument(documentId: string): Promise<void> {
    await this.call({ method: 'deleteDocument', args: [documentId] });
  }

  async deleteWorkspace(workspaceId: string): Promise<void> {
    await this.call({ method: 'deleteWorkspace', args: [workspaceId] });
  }

  async updateDocumentFields(documentId: string, fields: DocumentFields): Promise<void> {
    await this.call({ method: 'updateDocumentFields', args: [documentId, fields] });
  }

  async search(request: SearchRequest): Promise<SearchHit[]> {
    return (await this.call({ method: 'search', args: [request] })) as SearchHit[];
  }

  async countDocuments(filters: SearchFilters): Promise<number> {
    return (await this.call({ method: 'countDocuments', args: [filters] })) as number;
  }

  /**
   * The checkpoint is kept here once read or written: this object is the file's only writer
   * (one process owns a data dir), so the projection's read before each batch needs no trip
   * to the worker, where it could wait behind a search.
   */
  async getCheckpoint(): Promise<number> {
    if (this.checkpoint === undefined) {
      const generation = this.checkpointGeneration;
      const value = (await this.call({ method: 'getCheckpoint', args: [] })) as number;
      if (generation === this.checkpointGeneration) this.checkpoint = value;
      return value;
    }
    return this.checkpoint;
  }

  async setCheckpoint(position: number): Promise<void> {
    this.forgetCheckpoint();
    await this.call({ method: 'setCheckpoint', args: [position] });
    this.checkpoint = position;
  }

  async clear(): Promise<void> {
    this.forgetCheckpoint();
    await this.call({ method: 'clear', args: [] });
  }

  // ------------------------------------------------------------ embedding models

  async vectorModels(): Promise<VectorModels> {
    return (await this.call({ method: 'vectorModels', args: [] })) as VectorModels;
  }

  async beginVectorModel(model: VectorModel): Promise<void> {
    await this.call({ method: 'beginVectorModel', args: [model] });
  }

  async putVectors(documentId: string, modelId: string, vectors: ChunkVector[]): Promise<void> {
    await this.call({ method: 'putVectors', args: [documentId, modelId, vectors] });
  }

  async switchVectorModel(model: VectorModel): Promise<void> {
    await this.call({ method: 'switchVectorModel', args: [model] });
  }

  async dropVectorModel(modelId: string): Promise<void> {
    await this.call({ method: 'dropVectorModel', args: [modelId] });
  }

  /** See EmbeddedSearchIndex.nameLegacyModel. */
  async nameLegacyModel(modelId: string): Promise<void> {
    await this.call({ method: 'nameLegacyModel', args: [modelId] });
  }

  private forgetCheckpoint(): void {
    this.checkpoint = undefined;
    this.checkpointGeneration += 1;
  }

  /** Tests: makes the worker die of an uncaught error. */
  async crashForTest(): Promise<void> {
    await this.ready;
    this.worker.postMessage({ id: 0, method: 'crash', args: [] } satisfies WorkerRequest);
  }

  /** Answers every call sent before it, closes the index file in the worker, ends the thread. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const wasReady = await this.ready.then(() => true, () => false);
    const worker = this.worker;
    if (wasReady) {
      const id = this.nextId++;
      const closedInWorker = new Promise<void>((resolve) => {
        this.pending.set(id, { resolve: () => resolve(), reject: () => resolve() });
      });
      // The worker answers every call sent before the close, then closes the file.
      worker.postMessage({ id, method: 'close', args: [] } satisfies WorkerRequest);
      await closedInWorker;
    }
    this.terminated = true;
    await worker.terminate();
    for (const p of this.pending.values()) p.reject(new Error('search index is closed'));
    this.pending.clear();
  }
}
