import fc from 'fast-check';
import { DomainEvent } from '../../src/domain/event';
import { DomainError } from '../../src/domain/errors';

/** Names that exist on every plain object: as ids they must name nothing until created. */
export const BUILTIN_NAMES = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', '__defineGetter__', 'prototype'];

/** An id drawn from a small pool (so that commands meet), a built-in name, or anything at all. */
export const idFrom = (pool: string[]) => fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...pool) }, { weight: 3, arbitrary: fc.constantFrom(...BUILTIN_NAMES) }, { weight: 1, arbitrary: fc.string({ maxLength: 12 }) });

/** Moderate runs: each property runs in well under a few seconds. */
export const RUNS = { numRuns: 300 };

interface PureDecider<S, C, E extends DomainEvent> {
  initialState(): S;
  evolve(s: S, e: E): S;
  decide(c: C, s: S): E[];
}

/**
 * Runs `commands` through the decider, folding accepted events. A refusal must be a
 * DomainError (anything else, such as a TypeError from a prototype lookup, fails the run).
 * `check` sees each step: the state before, the command, and the events accepted (or the error).
 */
export function runCommands<S, C, E extends DomainEvent>(
  decider: PureDecider<S, C, E>,
  commands: C[],
  check: (step: { before: S; after: S; command: C; events: E[]; error: DomainError | null }) => void,
  initial: S = decider.initialState(),
): S {
  let state = initial;
  for (const command of commands) {
    let events: E[] = [];
    let error: DomainError | null = null;
    try {
      events = decider.decide(command, state);
    } catch (err) {
      if (!(err instanceof DomainError)) throw new Error(`${(command as { type?: string }).type} threw a non-domain error: ${String(err)}`, { cause: err });
      error = err;
    }
    const after = events.reduce((s, e) => decider.evolve(s, e), state);
    check({ before: state, after, command, events, error });
    state = after;
  }
  return state;
}
