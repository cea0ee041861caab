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
  /**
   * The only event types `handle` acts on, when it can say (it is then given only those). A
   * batch with none of them is not handled at all: no checkpoint read or write, no transaction.
   * The checkpoint moves past such batches with the next batch it handles, or once it is
   * LAZY_CHECKPOINT_EVENTS behind; a restart meanwhile reads those events again, and skips them.
   */
  eventTypes?: ReadonlySet<string>;
}

/** How far a consumer's stored checkpoint may lag behind the batches it had nothing to do in (see ConsumerSpec.eventTypes). */
export const LAZY_CHECKPOINT_EVENTS = 10_000;

/**
 * The one checkpointed loop of the code base: read the checkpoint, skip what was seen,
 * handle the rest, move the checkpoint. Replaying a batch changes nothing.
 */
export function checkpointedConsumer(spec: ConsumerSpec): Consumer {
  const types = spec.eventTypes;
  /** Handles the batch's fresh events; answers the checkpoint stored after it. */
  const applyBatch = async (events: RecordedEvent[]): Promise<number> => {
    const from = await spec.checkpoint.get();
    const fresh = events.filter((e) => e.position > from);
    if (fresh.length === 0) return from;
    const acted = types ? fresh.filter((e) => types.has(e.type)) : fresh;
    if (acted.length > 0) await spec.handle(acted);
    const last = fresh[fresh.length - 1].position;
    await spec.checkpoint.set(last);
    return last;
  };
  const run = spec.transaction ? (events: RecordedEvent[]) => spec.transaction!(() => applyBatch(events)) : applyBatch;
  /** The checkpoint as this consumer last read or stored it (undefined before its first batch). */
  let stored: number | undefined;
  return {
    name: spec.name,
    checkpoint: () => spec.checkpoint.get(),
    apply: async (events) => {
      if (events.length === 0) return;
      // A batch from at or before what it stored: the log is applied again from further back (a
      // rebuild after a reset of the checkpoint): what it knew of the stored value is stale.
      if (stored !== undefined && events[0].position <= stored) stored = undefined;
      if (types && stored !== undefined && events[events.length - 1].position - stored < LAZY_CHECKPOINT_EVENTS && !events.some((e) => types.has(e.type))) return;
      stored = await run(events);
    },
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
