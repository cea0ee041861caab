/**
 * What a form (or an action button) does on submit, in one place: clear the last error, mark
 * itself busy, run the call, show what failed, and stop being busy whatever happened. The
 * hook is `useSubmit` (./useSubmit.ts); this module has no Preact in it, so the unit tests
 * (test/unit/consoleSubmit.test.ts) run it without a DOM.
 *
 * `onError` turns a failure into what the form shows: the error itself (the default), a
 * friendlier Error, or `null` when the form handles it another way (a second sign-in step,
 * an existing account). It runs before the form stops being busy.
 */
export type OnError = (error: unknown) => unknown;
export type RunSubmit = (action: () => Promise<void>, onError?: OnError) => Promise<boolean>;

/**
 * The state changes of a run: `error(null)` first, `busy(+1)` when it starts and `busy(-1)`
 * when it ends (runs may overlap: busy is a count, none is dropped), `error(shown)` when the
 * action throws. The returned promise says whether it succeeded and never rejects.
 */
export function submitRunner(set: { busy: (delta: 1 | -1) => void; error: (error: unknown) => void }): RunSubmit {
  return async (action, onError = (e) => e) => {
    set.error(null);
    set.busy(1);
    try {
      await action();
      return true;
    } catch (err) {
      set.error(onError(err) ?? null);
      return false;
    } finally {
      set.busy(-1);
    }
  };
}
