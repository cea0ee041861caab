import { RecordedEvent } from '../domain/event';
import { ReadStore } from '../ports/readStore';
import { checkpointedConsumer, Consumer, eachEvent, readStoreCheckpoint } from './consumer';

/**
 * Something derived from the log: it applies batches of events in order and keeps,
 * atomically with its own state, the position of the last event applied.
 */
export interface Projection extends Consumer {
  /** Forget everything, checkpoint back to 0 (for a rebuild). */
  reset(): Promise<void>;
}

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
): Projection {
  return {
    ...checkpointedConsumer({
      name,
      checkpoint: readStoreCheckpoint(store, name),
      handle: eachEvent((e) => handle(e, store)),
      transaction: (fn) => store.transaction(fn),
    }),
    reset: async () => {
      await store.transaction(async () => {
        await store.clear(collections);
        await store.setCheckpoint(name, 0);
      });
    },
  };
}
