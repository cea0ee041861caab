import { useMemo, useState } from 'preact/hooks';
import { RunSubmit, submitRunner } from './submit';

export interface Submit {
  /** At least one run is under way (disable the submit button meanwhile). */
  busy: boolean;
  /** What the last run (or `fail`) left to show, for `<ErrorBox>`; null when nothing. */
  error: unknown;
  /** Run the action (see ./submit.ts); resolves true when it succeeded, false when it failed (never rejects). */
  run: RunSubmit;
  /** Show an error without running anything: a check in the form refused the input. */
  fail: (error: unknown) => void;
}

/** The submit pattern of the console's forms: busy flag, error to show, the call in between (./submit.ts). */
export function useSubmit(): Submit {
  const [running, setRunning] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const run = useMemo(() => submitRunner({ busy: (d) => setRunning((n) => n + d), error: setError }), []);
  return { busy: running > 0, error, run, fail: setError };
}
