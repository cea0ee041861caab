import { EventStore, Subscription } from '../ports/eventStore';
import { follow } from './consumer';
import { Projection } from './projection';

export interface RunnerLogger {
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface RunnerOptions {
  /**
   * `subscribe` (default): this process runs the projections. `poll`: another process (the
   * projector) runs them; this one only reads their stored checkpoints, so that waitFor
   * still gives read-your-writes in an API or worker process.
   */
  mode?: 'subscribe' | 'poll';
  /** Longest pause between checkpoint reads while someone waits (poll mode). */
  pollIntervalMs?: number;
  /** Interval of the background refresh of positions for lowWatermark() (poll mode, once started). */
  refreshIntervalMs?: number;
}

/**
 * Keeps projections up to date with the log (one subscription each) and lets a caller
 * wait until they have applied a given position: that is how a write is readable by
 * the next request (read-your-writes). In poll mode the projections run elsewhere and
 * waitFor polls their checkpoints instead.
 */
export class ProjectionRunner {
  private readonly positions = new Map<string, number>();
  private readonly subscriptions: Subscription[] = [];
  private waiters: { position: number; resolve: () => void }[] = [];
  readonly mode: 'subscribe' | 'poll';
  private readonly pollIntervalMs: number;
  private readonly refreshIntervalMs: number;
  private polling: Promise<void> | null = null;
  private refreshTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: EventStore,
    private readonly projections: Projection[],
    private readonly logger?: RunnerLogger,
    options: RunnerOptions = {},
  ) {
    this.mode = options.mode ?? 'subscribe';
    this.pollIntervalMs = options.pollIntervalMs ?? 100;
    this.refreshIntervalMs = options.refreshIntervalMs ?? 1000;
  }

  async start(): Promise<void> {
    if (this.mode === 'poll') {
      await this.refresh(this.projections);
      const tick = () => {
        this.refreshTimer = setTimeout(() => {
          this.refresh(this.projections)
            .catch((err) => this.logger?.error({ err }, 'reading projection checkpoints failed'))
            .finally(() => {
              if (this.refreshTimer) tick();
            });
        }, this.refreshIntervalMs);
        this.refreshTimer.unref();
      };
      tick();
      return;
    }
    for (const p of this.projections) {
      await p.prepare?.();
      this.positions.set(p.name, await p.checkpoint());
      const sub = await follow(this.store, p, {
        afterBatch: async (position) => {
          this.positions.set(p.name, position);
          this.notify();
        },
        onError: (err) => this.logger?.error({ err, projection: p.name }, 'projection failed; retrying'),
      });
      this.subscriptions.push(sub);
    }
  }

  /** The lowest position every projection has applied. */
  lowWatermark(): number {
    let min = Number.POSITIVE_INFINITY;
    for (const v of this.positions.values()) min = Math.min(min, v);
    return min === Number.POSITIVE_INFINITY ? 0 : min;
  }

  positionOf(name: string): number {
    return this.positions.get(name) ?? 0;
  }

  /** Resolves true once every projection has applied `position`, false after `timeoutMs`. */
  waitFor(position: number, timeoutMs = 5000): Promise<boolean> {
    if (position <= 0 || this.lowWatermark() >= position) return Promise.resolve(true);
    if (this.projections.length === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = {
        position,
        resolve: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      this.waiters.push(waiter);
      if (this.mode === 'poll') this.poll();
    });
  }

  /** Re-reads the stored checkpoints of `projections`. */
  private async refresh(projections: Projection[]): Promise<void> {
    const read = await Promise.all(projections.map(async (p) => [p.name, await p.checkpoint()] as const));
    for (const [name, position] of read) this.positions.set(name, position);
    this.notify();
  }

  /**
   * One polling loop per runner while anybody waits: reads the checkpoints of the
   * projections still behind the lowest awaited position, quickly at first, backing off to
   * `pollIntervalMs`. Waiters time out on their own timers.
   */
  private poll(): void {
    if (this.polling) return;
    this.polling = (async () => {
      let delay = 5;
      while (this.waiters.length > 0) {
        await new Promise((r) => setTimeout(r, delay));
        if (this.waiters.length === 0) break;
        const target = Math.min(...this.waiters.map((w) => w.position));
        try {
          await this.refresh(this.projections.filter((p) => (this.positions.get(p.name) ?? 0) < target));
        } catch (err) {
          this.logger?.error({ err }, 'reading projection checkpoints failed');
        }
        delay = Math.min(this.pollIntervalMs, delay * 2);
      }
    })().finally(() => {
      this.polling = null;
      if (this.waiters.length > 0) this.poll();
    });
  }

  private notify(): void {
    const low = this.lowWatermark();
    const ready = this.waiters.filter((w) => w.position <= low);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.position > low);
    for (const w of ready) w.resolve();
  }

  async stop(): Promise<void> {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
    await Promise.all(this.subscriptions.map((s) => s.stop()));
    this.subscriptions.length = 0;
  }
}

/**
 * Rebuild projections from position 0 (server stopped). Reports progress after each batch.
 */
export async function rebuildProjections(
  store: EventStore,
  projections: Projection[],
  onProgress?: (info: { projection: string; position: number; head: number; events: number }) => void,
  batchSize = 2000,
): Promise<{ events: number; applied: number; seconds: number }> {
  const started = process.hrtime.bigint();
  const head = await store.headPosition();
  for (const p of projections) await p.reset();
  // Read (and decrypt, upcast) the log once; every projection applies each batch.
  const label = projections.map((p) => p.name).join(', ');
  let position = 0;
  let count = 0;
  for (;;) {
    const batch = await store.readAll(position, batchSize);
    if (batch.length === 0) break;
    for (const p of projections) await p.apply(batch);
    position = batch[batch.length - 1].position;
    count += batch.length;
    onProgress?.({ projection: label, position, head, events: count });
  }
  return { events: count, applied: count * projections.length, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}
