import { DependencyContainer } from 'tsyringe';

/**
 * Tokens the composition root registers beside the ports' own (EVENT_STORE, READ_STORE, ...
 * declared with each port). Only the root (src/container.ts, src/roles/) resolves them.
 */

/** The event store as stored, under the encryption decorator (document text sealed): what the event feed publishes. */
export const STORED_EVENT_STORE = Symbol('STORED_EVENT_STORE');
/** Embeddings for search queries (a cache in front of EMBEDDINGS). */
export const QUERY_EMBEDDINGS = Symbol('QUERY_EMBEDDINGS');
/** Merges the search index's deleted text out of its files after an erasure (embedded index only). */
export const COMPACT_SEARCH_INDEX = Symbol('COMPACT_SEARCH_INDEX');
/**
 * Warms the search index's worker thread up on a throwaway index of its own (embedded index in
 * its thread only: `(sample: WarmUpSample) => Promise<void>`), used by the start-up rehearsal.
 */
export const WARM_SEARCH_THREAD = Symbol('WARM_SEARCH_THREAD');
/** What the root opened besides the ports (the shared MongoClient ...), released last on close. */
export const EXTRA_CLOSERS = Symbol('EXTRA_CLOSERS');
/** The MongoClient shared by the read store, GridFS, data keys and rate limits (KB_READ_STORE=mongodb only). */
export const MONGO_CLIENT = Symbol('MONGO_CLIENT');

/** Registered (true) in the start-up rehearsal's throwaway container only (src/roles/rehearsal.ts). */
export const REHEARSAL = Symbol('REHEARSAL');

/** A registration that only some configurations make (KB_FEED=kafka ...): undefined when absent. */
export function optional<T>(di: DependencyContainer, token: symbol): T | undefined {
  return di.isRegistered(token) ? di.resolve<T>(token) : undefined;
}
