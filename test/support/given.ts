import { DomainEvent } from '../../src/domain/event';
import { DomainError } from '../../src/domain/errors';

interface PureDecider<S, C, E extends DomainEvent> {
  initialState(): S;
  evolve(s: S, e: E): S;
  decide(c: C, s: S): E[];
}

/**
 * given(events).when(command).then(events) / .thenThrows(code, details?) for pure deciders;
 * given(events).state is the folded state.
 */
export function specFor<S, C, E extends DomainEvent>(decider: PureDecider<S, C, E>) {
  return (given: E[]) => ({
    state: given.reduce(decider.evolve, decider.initialState()),
    when: (command: C) => {
      const run = () => decider.decide(command, given.reduce(decider.evolve, decider.initialState()));
      return {
        then: (expected: E[]) => expect(run()).toEqual(expected),
        thenThrows: (code: string, details?: Record<string, unknown>) => {
          let caught: unknown;
          try {
            run();
          } catch (err) {
            caught = err;
          }
          expect(caught).toBeInstanceOf(DomainError);
          expect((caught as DomainError).code).toBe(code);
          if (details) expect((caught as DomainError).details).toEqual(expect.objectContaining(details));
        },
        result: run,
      };
    },
  });
}
