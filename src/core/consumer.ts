import { RecordedEvent } from '../domain/event';
import { EventStore, Subscription } from '../ports/eventStore';
import { ReadStore } from '../ports/readStore';

/** Where a consumer keeps the global position of the last event it has handled. */
export interface Checkpoint {
  get(): Promise<number>;
  set(position: number): Promise<void>;
}

/** A named checkpoint in the read store (stored with the read models it guards). */
export function readStoreCheckpoint(store: ReadStore, name: string): Checkpoint {
  return { get: () => store.getCheckpoint(name), set: (position) => store.setCheckpoint(name, position) };
}

/**
 * Anything that follows the log in order and remembers how far it got: projections,
 * the processing dispatcher, process managers, the erasure service.
 */
export interface Consumer {
  readonly name: string;
  checkpoint(): Promise<number>;
  /** Handles a batch; events at or below the checkpoint were handled before and are skipped. */
  apply(events: RecordedEvent[]): Promise<void>;
}

export interface ConsumerSpec {
  name: string;
  checkpoint: Checkpoint;
  /** The events of a batch not handled before, in log order. */
  handle(fresh: RecordedEvent[]): Promise<void>;
  /**
   * Runs the handling and the checkpoint as one unit (a read-store transaction): effects
   * happen exactly once. Without it a crash between the two repeats the batch, so effects
   * are at least once and must be idempotent.
   */
  transaction?: <R>(fn: () => Promise<R>) => Promise<R>;
}

/**
 * The one checkpointed loop of the code base: read the checkpoint, skip what was seen,
 * handle the rest, move the checkpoint. Replaying a batch changes nothing.
 */
export function checkpointedConsumer(spec: ConsumerSpec): Consumer {
  const applyBatch = async (events: RecordedEvent[]): Promise<void> => {
    const from = await spec.checkpoint.get();
    const fresh = events.filter((e) => e.position > from);
    if (fresh.length === 0) return;
    await spec.handle(fresh);
    await spec.checkpoint.set(fresh[fresh.length - 1].position);
  };
  return {
    name: spec.name,
    checkpoint: () => spec.checkpoint.get(),
    apply: spec.transaction ? (events) => spec.transaction!(() => applyBatch(events)) : applyBatch,
  };
}

/** Handles fresh events one at a time (most consumers think per event). */
export const eachEvent =
  (handle: (event: RecordedEvent) => Promise<void>) =>
  async (fresh: RecordedEvent[]): Promise<void> => {
    for (const e of fresh) await handle(e);
  };

/**
 * Feeds a consumer from the log: catch up from its checkpoint, then follow live. A failed
 * batch is retried by the subscription (the checkpoint did not move).
 */
export async function follow(
  store: EventStore,
  consumer: Consumer,
  options: { onError?: (err: unknown) => void; afterBatch?: (lastPosition: number) => Promise<void> } = {},
): Promise<Subscription> {
  const from = await consumer.checkpoint();
  return store.subscribe(
    from,
    async (events) => {
      await consumer.apply(events);
      await options.afterBatch?.(events[events.length - 1].position);
    },
    options.onError,
  );
}

/** A background service that follows the log with one consumer (started and stopped with the app). */
export function followingService(
  store: EventStore,
  consumer: Consumer,
  options: { onError?: (err: unknown) => void; afterBatch?: (lastPosition: number) => Promise<void>; onStart?: () => void } = {},
): { name: string; start(): Promise<void>; stop(): Promise<void> } {
  let sub: Subscription | null = null;
  return {
    name: consumer.name,
    start: async () => {
      options.onStart?.();
      sub = await follow(store, consumer, options);
    },
    stop: async () => {
      await sub?.stop();
      sub = null;
    },
  };
}
