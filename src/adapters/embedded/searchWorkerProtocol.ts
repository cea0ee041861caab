/** Messages between WorkerSearchIndex (main thread) and searchWorker (its thread). */
import type { ChunkVector, DocumentFields, IndexedChunk, SearchFilters, SearchRequest, VectorModel } from '../../ports/searchIndex';

/**
 * The start-up warm-up of the index's thread: one made-up document's chunks (one workspace,
 * one document, vectors of the live model) and a search in it, run through a throwaway
 * in-memory index in the same thread (src/roles/rehearsal.ts). Nothing reaches the live index.
 */
export interface WarmUpSample {
  chunks: IndexedChunk[];
  query: SearchRequest;
}

export type WorkerRequest =
  | { id: number; method: 'search'; args: [SearchRequest] }
  | { id: number; method: 'countDocuments'; args: [SearchFilters] }
  | { id: number; method: 'stats'; args: [] }
  | { id: number; method: 'getCheckpoint'; args: [] }
  | { id: number; method: 'upsertDocument'; args: [string, IndexedChunk[]] }
  | { id: number; method: 'deleteDocument'; args: [string] }
  | { id: number; method: 'deleteWorkspace'; args: [string] }
  | { id: number; method: 'updateDocumentFields'; args: [string, DocumentFields] }
  | { id: number; method: 'setCheckpoint'; args: [number] }
  | { id: number; method: 'clear'; args: [] }
  | { id: number; method: 'vectorModels'; args: [] }
  | { id: number; method: 'beginVectorModel'; args: [VectorModel] }
  | { id: number; method: 'putVectors'; args: [string, string, ChunkVector[]] }
  | { id: number; method: 'switchVectorModel'; args: [VectorModel] }
  | { id: number; method: 'dropVectorModel'; args: [string] }
  | { id: number; method: 'nameLegacyModel'; args: [string] }
  | { id: number; method: 'warmUp'; args: [WarmUpSample] }
  | { id: number; method: 'close'; args: [] }
  /** Tests only: the worker throws an uncaught error. */
  | { id: number; method: 'crash'; args: [] };

export type WorkerMethod = WorkerRequest['method'];

export type WorkerReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: { name: string; message: string; queryModel?: string; activeModel?: string } };

export interface IndexStats {
  chunks: number;
  dims: number;
  vectorBytes: number;
}

/** The worker's first message, once the index is open and loaded. */
export interface WorkerReady {
  ready: true;
  stats: IndexStats;
}

const READS: ReadonlySet<WorkerMethod> = new Set<WorkerMethod>(['search', 'countDocuments', 'stats', 'getCheckpoint', 'vectorModels']);

/** Calls that only read: served before waiting writes. */
export const isRead = (method: WorkerMethod): boolean => READS.has(method);

/**
 * The worker's waiting calls: reads jump the queue of waiting writes, but when both wait they
 * take turns (read, write, read, ...), so a search waits for at most one index update, and a
 * steady stream of searches never starves the updates (every command's read-your-writes waits
 * for the search-index projection, so a starved update would hold up every write). Each kind
 * keeps its arrival order. A caller that awaits each call (the projection) never has two
 * waiting, so its calls keep their order; calls of different callers that wait at the same
 * time have no order between them anyway.
 */
export class CallQueue<T extends { method: WorkerMethod }> {
  private readonly reads: T[] = [];
  private readonly writes: T[] = [];
  private lastWasRead = false;

  push(call: T): void {
    (isRead(call.method) ? this.reads : this.writes).push(call);
  }

  /** The next call to run, or undefined when none waits. */
  shift(): T | undefined {
    const read = this.reads.length > 0 && (!this.lastWasRead || this.writes.length === 0);
    const next = read ? this.reads.shift() : this.writes.shift();
    if (next) this.lastWasRead = read;
    return next;
  }

  get size(): number {
    return this.reads.length + this.writes.length;
  }
}
