import { RecordedEvent } from '../domain/event';
import { ReadStore } from '../ports/readStore';

/**
 * Something derived from the log: it applies batches of events in order and keeps,
 * atomically with its own state, the position of the last event applied.
 */
export interface Projection {
  readonly name: string;
  checkpoint(): Promise<number>;
  /** Apply events (positions above the checkpoint are new; older ones must be ignored). */
  apply(events: RecordedEvent[]): Promise<void>;
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
    name,
    checkpoint: () => store.getCheckpoint(name),
    reset: async () => {
      await store.transaction(async () => {
        await store.clear(collections);
        await store.setCheckpoint(name, 0);
      });
    },
    apply: async (events) => {
      await store.transaction(async () => {
        const from = await store.getCheckpoint(name);
        let last = from;
        for (const e of events) {
          if (e.position <= from) continue;
          await handle(e, store);
          last = e.position;
        }
        if (last > from) await store.setCheckpoint(name, last);
      });
    },
  };
}
