import { randomUUID } from 'node:crypto';
import { AuthMethod, DomainEvent, NewEvent, RecordedEvent } from '../domain/event';
import { DomainError } from '../domain/errors';
import { eventBytes, MAX_EVENT_BYTES } from '../domain/eventSize';
import { EventStore, ExpectedRevision, WrongExpectedRevisionError } from '../ports/eventStore';
import { schemaVersionOf } from './eventSchemas';

/** A pure decider: fold events into state, decide events from a command and the state. */
export interface Decider<S, C, E extends DomainEvent> {
  initialState(): S;
  evolve(state: S, event: E): S;
  /** Throws DomainError when the command is refused. */
  decide(command: C, state: S): E[];
}

/** Who asks, and when: passed in with every command (the domain never reads a clock). */
export interface CommandContext {
  actorId: string | null;
  authMethod: AuthMethod;
  correlationId: string;
  now: Date;
  workspaceId?: string;
}

export interface CommandResult<S, E extends DomainEvent> {
  events: E[];
  state: S;
  /** Global position of the last appended event; 0 when nothing was appended. */
  position: number;
  revision: number;
}

export function systemContext(now = new Date(), correlationId: string = randomUUID()): CommandContext {
  return { actorId: null, authMethod: 'system', correlationId, now };
}

export function toNewEvents<E extends DomainEvent>(events: E[], ctx: CommandContext, workspaceId?: string): NewEvent[] {
  return events.map((e) => ({
    id: randomUUID(),
    type: e.type,
    data: e.data,
    metadata: {
      actorId: ctx.actorId,
      authMethod: ctx.authMethod,
      correlationId: ctx.correlationId,
      occurredAt: ctx.now.toISOString(),
      schemaVersion: schemaVersionOf(e.type),
      ...((workspaceId ?? ctx.workspaceId) ? { workspaceId: workspaceId ?? ctx.workspaceId } : {}),
    },
  }));
}

export function fold<S, E extends DomainEvent>(decider: Pick<Decider<S, never, E>, 'initialState' | 'evolve'>, events: RecordedEvent[]): S {
  return events.reduce((s, e) => decider.evolve(s, e as unknown as E), decider.initialState());
}

interface CachedState {
  state: unknown;
  revision: number;
}

const CACHE_LIMIT = 10_000;
/**
 * Folded states by event store, decider and stream. A cached state is only a starting point:
 * the stream is still read from the cached revision on, so writes by other processes are
 * seen, and the append's expected revision guards the rest. States are immutable. Keyed by
 * the store first: two stores in one process (the start-up rehearsal's beside the server's,
 * tests) never see each other's streams.
 */
const stateCache = new WeakMap<object, WeakMap<object, Map<string, CachedState>>>();

function cacheFor(store: object, decider: object): Map<string, CachedState> {
  let byDecider = stateCache.get(store);
  if (!byDecider) {
    byDecider = new WeakMap();
    stateCache.set(store, byDecider);
  }
  let m = byDecider.get(decider);
  if (!m) {
    m = new Map();
    byDecider.set(decider, m);
  }
  return m;
}

function remember(cache: Map<string, CachedState>, streamId: string, entry: CachedState): void {
  cache.delete(streamId);
  cache.set(streamId, entry);
  if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
}

/** The aggregate's current state, folded from its stream (from a cached fold when there is one). */
export async function loadState<S, E extends DomainEvent>(
  store: EventStore,
  streamId: string,
  decider: Pick<Decider<S, never, E>, 'initialState' | 'evolve'>,
): Promise<{ state: S; revision: ExpectedRevision }> {
  const cache = cacheFor(store, decider);
  const cached = cache.get(streamId);
  const from = cached ? cached.revision + 1 : 0;
  const events = await store.readStream(streamId, from);
  if (!cached && events.length === 0) return { state: decider.initialState(), revision: 'no_stream' };
  const state = events.reduce((s, e) => decider.evolve(s, e as unknown as E), cached ? (cached.state as S) : decider.initialState());
  const revision = events.length ? events[events.length - 1].revision : (cached as CachedState).revision;
  remember(cache, streamId, { state, revision });
  return { state, revision };
}

/** What is told of every append the command handler made: its events, the last of them at `position`. */
export type AppendObserver = (events: readonly DomainEvent[], position: number) => void;
const appendObservers = new WeakMap<object, Set<AppendObserver>>();

/**
 * `observer` is told, synchronously, of every append the command handler makes to `store`, as
 * soon as the store accepted it and before the command's caller gets its result (so before any
 * wait for the read models). The composition root registers the revocations (src/security/revocations.ts).
 * Returns the unsubscribe function.
 */
export function observeAppends(store: EventStore, observer: AppendObserver): () => void {
  let set = appendObservers.get(store);
  if (!set) {
    set = new Set();
    appendObservers.set(store, set);
  }
  set.add(observer);
  const observers = set;
  return () => observers.delete(observer);
}

function tellObservers(store: EventStore, events: readonly DomainEvent[], position: number): void {
  const observers = appendObservers.get(store);
  if (!observers) return;
  for (const o of observers) o(events, position);
}

/** Tail of the queue of commands per stream in this process. */
const streamQueues = new Map<string, Promise<unknown>>();

/**
 * Commands on one stream run one after another within a process, so concurrent requests
 * on one aggregate do not race each other into revision conflicts. (Other processes can
 * still write: the expected revision and the retry loop handle those.)
 */
function serialized<R>(streamId: string, fn: () => Promise<R>): Promise<R> {
  const previous = streamQueues.get(streamId) ?? Promise.resolve();
  const run = previous.then(fn, fn);
  const tail = run.catch(() => undefined);
  streamQueues.set(streamId, tail);
  void tail.then(() => {
    if (streamQueues.get(streamId) === tail) streamQueues.delete(streamId);
  });
  return run;
}

/**
 * Load → fold → decide → append with the expected revision. On a concurrent write to
 * the same stream, re-read and decide again (a few times), then give up with 409 CONFLICT.
 */
export function handleCommand<S, C, E extends DomainEvent>(
  store: EventStore,
  streamId: string,
  decider: Decider<S, C, E>,
  command: C,
  ctx: CommandContext,
  options: { retries?: number; workspaceId?: string } = {},
): Promise<CommandResult<S, E>> {
  return serialized(streamId, () => decideAndAppend(store, streamId, decider, command, ctx, options));
}

async function decideAndAppend<S, C, E extends DomainEvent>(
  store: EventStore,
  streamId: string,
  decider: Decider<S, C, E>,
  command: C,
  ctx: CommandContext,
  options: { retries?: number; workspaceId?: string } = {},
): Promise<CommandResult<S, E>> {
  const retries = options.retries ?? 5;
  for (let attempt = 0; ; attempt++) {
    const { state, revision } = await loadState(store, streamId, decider);
    const events = decider.decide(command, state);
    if (events.length === 0) {
      return { events, state, position: 0, revision: revision === 'no_stream' ? -1 : (revision as number) };
    }
    const newEvents = toNewEvents(events, ctx, options.workspaceId);
    assertEventSizes(newEvents);
    try {
      const result = await store.append(streamId, newEvents, revision);
      tellObservers(store, events, result.position);
      const next = events.reduce((s, e) => decider.evolve(s, e), state);
      if (result.nextRevision === (revision === 'no_stream' ? -1 : (revision as number)) + events.length) {
        remember(cacheFor(store, decider), streamId, { state: next, revision: result.nextRevision });
      }
      return { events, state: next, position: result.position, revision: result.nextRevision };
    } catch (err) {
      if (err instanceof WrongExpectedRevisionError && attempt < retries) continue;
      if (err instanceof WrongExpectedRevisionError) {
        throw new DomainError('CONFLICT', 'The resource was changed concurrently; retry the request.');
      }
      throw err;
    }
  }
}

/**
 * No event over MAX_EVENT_BYTES reaches the store (production servers refuse large appends,
 * and a refused event would be retried for ever): refused here with a clear error.
 */
export function assertEventSizes(events: NewEvent[]): void {
  for (const e of events) {
    const bytes = eventBytes(e);
    if (bytes > MAX_EVENT_BYTES) {
      throw new DomainError('PAYLOAD_TOO_LARGE', `A ${e.type} event of ${bytes} bytes would pass the ${MAX_EVENT_BYTES}-byte limit of one event.`, {
        eventType: e.type,
        eventBytes: bytes,
        maxEventBytes: MAX_EVENT_BYTES,
      });
    }
  }
}
