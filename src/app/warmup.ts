import type { Logger } from 'pino';

/** What /readyz reports about the models loaded at start-up. */
export type WarmupState = 'warming' | 'ready' | 'failed';

/**
 * Background warm-up at start-up (the embedding model, today): started without being
 * awaited, so the server listens at once; /readyz answers 503 `warming` until it is done.
 * A failure is logged and reported (`failed`), and the work it concerns retries on first use.
 */
export class Warmup {
  state: WarmupState = 'warming';
  error?: string;
  ms?: number;
  readonly done: Promise<void>;

  constructor(task: () => Promise<void>, logger?: Logger) {
    const started = Date.now();
    this.done = task().then(
      () => {
        this.state = 'ready';
        this.ms = Date.now() - started;
        logger?.info({ ms: this.ms }, 'embedding model warmed up');
      },
      (err: unknown) => {
        this.state = 'failed';
        this.error = err instanceof Error ? err.message : String(err);
        logger?.error({ err }, 'embedding model warm-up failed');
      },
    );
  }
}
