import { RecordedEvent } from '../domain/event';
import { ReadStore } from '../ports/readStore';
import { checkpointedConsumer, Consumer, eachEvent } from './consumer';

/**
 * Something derived from the log: it applies batches of events in order and keeps,
 * atomically with its own state, the position of the last event applied.
 */
export interface Projection extends Consumer {
  /** Forget everything, checkpoint back to 0 (for a rebuild). */
  reset(): Promise<void>;
  /**
   * Called by the process that applies events, before it reads the checkpoint: a read model
   * stored by an older version of this projection (another key scheme, say) is reset here,
   * so that it is rebuilt from the log on its own.
   */
  prepare?(): Promise<void>;
  /**
   * Its batch and checkpoint commit in the read store's transaction (readModelProjection), so
   * the runner may commit it together with others in one. A projection keeping its checkpoint
   * elsewhere (the search index) is applied on its own, never inside another's transaction:
   * its read-store writes would commit with that transaction, and its checkpoint without.
   */
  readonly joinsReadStoreTransaction?: boolean;
  /**
   * The only event types this projection acts on, when it can say (it still sees every event
   * and moves its checkpoint past the others). A rebuild keeps a span's events of these types
   * in memory for a projection applied after the span, instead of reading the span again from
   * the log: list only small events (large ones, such as chunks and vectors, are read from
   * their stream when needed).
   */
  readonly eventTypes?: ReadonlySet<string>;
}

export interface ReadModelOptions {
  /**
   * Version of the read model's layout. Bump it when stored rows change shape or key in a
   * way old rows cannot be read: a store holding another version is cleared and rebuilt
   * from the log at the next start (version 1 is what a store without a record holds).
   */
  version?: number;
}

/** Where a projection's layout version is kept, beside its checkpoint. */
export const versionKey = (name: string): string => `${name}#version`;
/** Non-zero while a clear of the projection's collections is under way (or was cut short by a crash). */
export const clearingKey = (name: string): string => `${name}#clearing`;

/** Per-event handler of a read-model projection. It may read and write the read store. */
export type ReadModelHandler = (event: RecordedEvent, store: ReadStore) => Promise<void>;

/**
 * A projection into read-store collections. Each batch and its checkpoint commit in one
 * transaction; events at or below the checkpoint are skipped, so replays change nothing.
 */
export function readModelProjection(
  name: string,
  store: ReadStore,
  collections: string[],
  handle: ReadModelHandler,
  options: ReadModelOptions = {},
): Projection {
  const version = options.version ?? 1;
  const storedVersion = async () => (await store.getCheckpoint(versionKey(name))) || 1;
  // The clear runs outside a transaction (a large collection cannot be cleared within a
  // server's transaction limits), so it is bracketed: checkpoint to 0 and a marker first,
  // then the clear, then the version and the marker's removal. A crash mid-way leaves the
  // marker (and the checkpoint at 0), and `prepare` clears again before anything applies.
  const clear = async () => {
    await store.transaction(async () => {
      await store.setCheckpoint(clearingKey(name), 1);
      await store.setCheckpoint(name, 0);
    });
    await store.clear(collections);
    await store.transaction(async () => {
      await store.setCheckpoint(versionKey(name), version);
      await store.setCheckpoint(clearingKey(name), 0);
    });
  };
  return {
    ...checkpointedConsumer({
      name,
      // A store of another layout version has applied nothing this code can read.
      checkpoint: { get: async () => ((await storedVersion()) === version ? store.getCheckpoint(name) : 0), set: (position) => store.setCheckpoint(name, position) },
      handle: eachEvent((e) => handle(e, store)),
      transaction: (fn) => store.transaction(fn),
    }),
    joinsReadStoreTransaction: true,
    reset: clear,
    prepare: async () => {
      if ((await storedVersion()) !== version || (await store.getCheckpoint(clearingKey(name))) !== 0) await clear();
    },
  };
}
