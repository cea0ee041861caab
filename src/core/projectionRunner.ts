import { EventStore, Subscription } from '../ports/eventStore';
import { Projection } from './projection';

export interface RunnerLogger {
  error(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/**
 * Keeps projections up to date with the log (one subscription each) and lets a caller
 * wait until they have applied a given position: that is how a write is readable by
 * the next request (read-your-writes).
 */
export class ProjectionRunner {
  private readonly positions = new Map<string, number>();
  private readonly subscriptions: Subscription[] = [];
  private waiters: { position: number; resolve: () => void }[] = [];

  constructor(
    private readonly store: EventStore,
    private readonly projections: Projection[],
    private readonly logger?: RunnerLogger,
  ) {}

  async start(): Promise<void> {
    for (const p of this.projections) {
      const from = await p.checkpoint();
      this.positions.set(p.name, from);
      const sub = this.store.subscribe(
        from,
        async (events) => {
          await p.apply(events);
          this.positions.set(p.name, events[events.length - 1].position);
          this.notify();
        },
        (err) => this.logger?.error({ err, projection: p.name }, 'projection failed; retrying'),
      );
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
): Promise<{ events: number; seconds: number }> {
  const started = process.hrtime.bigint();
  const head = await store.headPosition();
  let total = 0;
  for (const p of projections) {
    await p.reset();
    let position = 0;
    let count = 0;
    for (;;) {
      const batch = await store.readAll(position, batchSize);
      if (batch.length === 0) break;
      await p.apply(batch);
      position = batch[batch.length - 1].position;
      count += batch.length;
      onProgress?.({ projection: p.name, position, head, events: count });
    }
    total += count;
  }
  return { events: total, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}
