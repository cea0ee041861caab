import { randomUUID } from 'node:crypto';
import { AuthMethod, DomainEvent, NewEvent, RecordedEvent } from '../domain/event';
import { DomainError } from '../domain/errors';
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

/** The aggregate's current state, folded from its stream. */
export async function loadState<S, E extends DomainEvent>(
  store: EventStore,
  streamId: string,
  decider: Pick<Decider<S, never, E>, 'initialState' | 'evolve'>,
): Promise<{ state: S; revision: ExpectedRevision }> {
  const events = await store.readStream(streamId);
  return {
    state: fold(decider, events),
    revision: events.length === 0 ? 'no_stream' : events[events.length - 1].revision,
  };
}

/**
 * Load → fold → decide → append with the expected revision. On a concurrent write to
 * the same stream, re-read and decide again (a few times), then give up with 409 CONFLICT.
 */
export async function handleCommand<S, C, E extends DomainEvent>(
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
    try {
      const result = await store.append(streamId, toNewEvents(events, ctx, options.workspaceId), revision);
      const next = events.reduce((s, e) => decider.evolve(s, e), state);
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
