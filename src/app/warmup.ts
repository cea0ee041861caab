import type { Logger } from 'pino';

/** What /readyz reports about the models loaded at start-up. */
export type WarmupState = 'warming' | 'ready' | 'failed';

/**
 * Background warm-up at start-up: the embedding model, and (`add`, by the document processor,
 * before the server listens) the extraction worker and the document embedding thread a first
 * upload would otherwise start. Started without being awaited, so the server listens at once;
 * /readyz answers 503 `warming` until every part is done. A failure is logged and reported
 * (`failed`), and the work it concerns retries on first use.
 */
export class Warmup {
  state: WarmupState = 'warming';
  error?: string;
  ms?: number;
  private readonly started = Date.now();
  private pending = 0;
  private all: Promise<void> = Promise.resolve();

  constructor(
    task: () => Promise<void>,
    private readonly logger?: Logger,
  ) {
    this.add('embedding model', task);
  }

  /** Every part added so far, settled (never rejects). */
  get done(): Promise<void> {
    return this.all;
  }

  /** One more part to wait for (`what` names it in the log). */
  add(what: string, task: () => Promise<void>): void {
    this.pending++;
    if (this.state === 'ready') this.state = 'warming';
    const part = task().then(
      () => {
        this.logger?.info({ ms: Date.now() - this.started }, `${what} warmed up`);
        this.settle();
      },
      (err: unknown) => {
        this.state = 'failed';
        this.error ??= err instanceof Error ? err.message : String(err);
        this.logger?.error({ err }, `${what} warm-up failed`);
        this.settle();
      },
    );
    this.all = Promise.all([this.all, part]).then(() => undefined);
  }

  private settle(): void {
    this.pending--;
    if (this.pending > 0) return;
    this.ms = Date.now() - this.started;
    if (this.state === 'warming') this.state = 'ready';
  }
}
