/** A comparison on one field of a read-model document. */
export type FieldCondition =
  | string
  | number
  | boolean
  | null
  | { $in: (string | number)[] }
  | { $ne: string | number | boolean | null }
  | { $contains: string } // array field contains the value
  | { $containsAny: string[] } // array field contains any of the values
  | { $ilike: string } // case-insensitive substring of a string field
  | { $gt?: string | number; $gte?: string | number; $lt?: string | number; $lte?: string | number };

/** Conjunction of conditions on top-level fields. */
export type Filter = Record<string, FieldCondition>;

export interface FindOptions {
  sort?: { field: string; direction: 'asc' | 'desc' }[];
  skip?: number;
  limit?: number;
}

export interface ReadDoc {
  id: string;
}

/** One read model: JSON documents addressed by id, queryable by top-level fields. */
export interface Collection<T extends ReadDoc> {
  get(id: string): Promise<T | null>;
  getMany(ids: string[]): Promise<T[]>;
  put(doc: T): Promise<void>;
  delete(id: string): Promise<void>;
  deleteMany(filter: Filter): Promise<number>;
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
  count(filter: Filter): Promise<number>;
}

export interface IndexSpec {
  fields: string[];
  unique?: boolean;
}

/**
 * Storage for read models and projection checkpoints. A projection's batch and its
 * checkpoint are written in one `transaction`, so a crash never half-applies a batch.
 */
export interface ReadStore {
  collection<T extends ReadDoc>(name: string, indexes?: IndexSpec[]): Collection<T>;
  getCheckpoint(projection: string): Promise<number>;
  setCheckpoint(projection: string, position: number): Promise<void>;
  /** Run `fn` atomically. Writers are serialised by the caller (one projector per read model). */
  transaction<R>(fn: () => Promise<R>): Promise<R>;
  /**
   * Drop every document of the given collections (for a rebuild). Called outside any
   * transaction and not atomic (a large collection is cleared in batches): a caller that
   * must survive a crash mid-way records that first (see readModelProjection's reset).
   */
  clear(collections: string[]): Promise<void>;
  /**
   * Runs a large load (a rebuild from the log, its collections just cleared) with the store's
   * upkeep arranged for bulk writes. Inside, every read and query sees every write as usual,
   * transactions commit as usual, and a write answered inside a committed transaction is
   * kept; only the cost changes. An adapter may defer the upkeep of secondary indexes of
   * collections that are empty when the load begins (building them once, at the end or at
   * the first query that needs them), and may buffer a transaction's writes so that a row
   * written many times is stored once. If the process dies inside, the store is still valid:
   * the next open restores whatever was deferred. Nested calls join the outer load.
   *
   * An adapter may also commit the load's own transactions (those `fn` runs; not another
   * flow's, which commit as they return) after they return (on another
   * connection, while the caller goes on with the next), provided that: they commit in the
   * order they ran, each whole with the checkpoints it set (a process killed at any point
   * keeps a prefix of them, so each projection resumes from its last stored checkpoint);
   * reads and queries in this process see them as if committed; and `bulkLoad` returns only
   * once all have committed, or rejects with the first failure (none after it is kept, and
   * transactions begun after it reject).
   */
  bulkLoad<R>(fn: () => Promise<R>): Promise<R>;
  close(): Promise<void>;
}

export const READ_STORE = Symbol('READ_STORE');
