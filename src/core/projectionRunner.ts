import { RecordedEvent } from '../domain/event';
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
  /**
   * Runs one batch of every projection as one unit (the read store's transaction): one commit
   * per batch instead of one per projection. Without it each projection commits its own.
   */
  batchTransaction?: BatchTransaction;
  /**
   * The read store's bulk load (ReadStore.bulkLoad). With `batchTransaction`, a start that
   * finds the projections `catchUp.minEvents` or more behind the log (a read model whose
   * layout version changed is rebuilt from 0, say) applies the log up to the head as a
   * rebuild does, in spans inside a bulk load, in the background, then follows the log
   * batch by batch.
   */
  bulkLoad?: BatchTransaction;
  catchUp?: { minEvents?: number; batchSize?: number; eventsPerTransaction?: number };
}

/** Events behind the head from which a start catches up in spans (RunnerOptions.bulkLoad). */
const CATCH_UP_MIN_EVENTS = 20_000;

/** A transaction that projections' own transactions join (ReadStore.transaction). */
export type BatchTransaction = <R>(fn: () => Promise<R>) => Promise<R>;

/**
 * Keeps projections up to date with the log and lets a caller wait until they have applied a
 * given position: that is how a write is readable by the next request (read-your-writes).
 * The log is read (and decrypted, upcast) once for all projections: one subscription feeds
 * each batch to every projection in turn, in one `batchTransaction` when given. A projection
 * that fails is detached and follows the log on its own subscription (retrying), so one
 * broken projection never holds back the others. In poll mode the projections run elsewhere
 * and waitFor polls their checkpoints instead.
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
  /** The transaction batches commit in (also what a rebuild in this process uses). */
  readonly batchTransaction?: BatchTransaction;
  /** Projections fed by the shared subscription (the others failed once and follow on their own). */
  private readonly shared = new Set<Projection>();
  private stopped = false;
  private readonly bulkLoad?: BatchTransaction;
  private readonly catchUpOptions: { minEvents: number; batchSize?: number; eventsPerTransaction?: number };
  /** The catch-up in spans a start began, until it hands over to the subscription. */
  private catchingUp: Promise<void> | null = null;
  /** Told of every batch the projections of this process have applied (onApplied). */
  private readonly appliedListeners = new Set<(events: readonly RecordedEvent[] | undefined) => void>();

  constructor(
    private readonly store: EventStore,
    private readonly projections: Projection[],
    private readonly logger?: RunnerLogger,
    options: RunnerOptions = {},
  ) {
    this.mode = options.mode ?? 'subscribe';
    this.pollIntervalMs = options.pollIntervalMs ?? 100;
    this.refreshIntervalMs = options.refreshIntervalMs ?? 1000;
    this.batchTransaction = options.batchTransaction;
    this.bulkLoad = options.bulkLoad;
    this.catchUpOptions = { minEvents: CATCH_UP_MIN_EVENTS, ...options.catchUp };
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
    this.stopped = false;
    for (const p of this.projections) {
      await p.prepare?.();
      this.positions.set(p.name, await p.checkpoint());
      this.shared.add(p);
    }
    if (this.projections.length === 0) return;
    const from = this.sharedFrom();
    if (this.bulkLoad && this.batchTransaction && (await this.store.headPosition()) - from >= this.catchUpOptions.minEvents) {
      this.catchingUp = this.catchUp(from).finally(() => {
        this.catchingUp = null;
      });
      return;
    }
    this.subscribeShared(from);
  }

  /**
   * `listener` is called once the read models of this process have applied a batch (as soon as
   * the read-store transaction committed, before the projections applied outside it, such as the
   * search index; without one, once every projection applied it), before
   * anybody waiting for it (waitFor) is told: with the batch's events, or `undefined` when
   * they are not at hand (a catch-up span, a detached projection's batch: anything may have
   * changed). What caches read models here uses to forget what the batch changed. Subscribe
   * mode only: in poll mode the projections run in another process and nothing is called.
   * Returns the unsubscribe function.
   */
  onApplied(listener: (events: readonly RecordedEvent[] | undefined) => void): () => void {
    this.appliedListeners.add(listener);
    return () => this.appliedListeners.delete(listener);
  }

  private applied(events: readonly RecordedEvent[] | undefined): void {
    for (const l of this.appliedListeners) {
      try {
        l(events);
      } catch (err) {
        this.logger?.error({ err }, 'a listener of applied batches failed');
      }
    }
  }

  private sharedFrom(): number {
    return Math.min(...this.projections.map((p) => this.positions.get(p.name) ?? 0));
  }

  private subscribeShared(from: number): void {
    this.subscriptions.push(
      this.store.subscribe(from, (events) => this.applyShared(events), (err) => this.logger?.error({ err }, 'reading the log for the projections failed; retrying')),
    );
  }

  /**
   * Far behind the log: apply it up to the head as a rebuild does (spans in one transaction
   * each, inside the read store's bulk load), moving the positions after each span, then
   * follow the log batch by batch from where every projection is. Should a span fail, it
   * rolled back: the subscription takes over from the checkpoints (and detaches a projection
   * that keeps failing, as it does live).
   */
  private async catchUp(from: number): Promise<void> {
    const members = [...this.shared];
    const started = Date.now();
    try {
      const r = await applyInSpans(this.store, members, from, {
        transaction: this.batchTransaction,
        bulkLoad: this.bulkLoad,
        batchSize: this.catchUpOptions.batchSize,
        eventsPerTransaction: this.catchUpOptions.eventsPerTransaction,
        shouldStop: () => this.stopped,
        afterSpan: (position) => {
          for (const p of members) this.advance(p, position);
          this.applied(undefined);
          this.notify();
        },
      });
      this.logger?.info({ events: r.events, position: r.position, seconds: (Date.now() - started) / 1000 }, 'projections caught up with the log in spans');
    } catch (err) {
      this.logger?.error({ err }, 'catching up in spans failed; following the log batch by batch');
    }
    if (this.stopped) return;
    for (const p of members) this.positions.set(p.name, await p.checkpoint());
    if (this.stopped) return;
    this.subscribeShared(this.sharedFrom());
  }

  /** One batch of the shared subscription, applied by every projection still fed by it. */
  private async applyShared(events: RecordedEvent[]): Promise<void> {
    const members = [...this.shared];
    if (members.length === 0 || events.length === 0) return;
    const last = events[events.length - 1].position;
    // Read-model projections commit together; any other is applied on its own, after that commit.
    const grouped = this.batchTransaction ? members.filter((p) => p.joinsReadStoreTransaction === true) : [];
    let alone = members.filter((p) => !grouped.includes(p));
    let told = false;
    if (this.batchTransaction && grouped.length > 0) {
      try {
        await this.batchTransaction(async () => {
          for (const p of grouped) await p.apply(events);
        });
        for (const p of grouped) this.advance(p, last);
        // The read models changed: their listeners are told now, not after the projections
        // applied on their own below (the search index may take long, and a write whose
        // bounded wait ends meanwhile is answered: nothing may serve the rows it changed from before).
        this.applied(events);
        told = true;
      } catch {
        // Rolled back as a whole: apply them one by one below, to find the one that fails.
        alone = members;
      }
    }
    for (const p of alone) {
      try {
        await p.apply(events);
        this.advance(p, last);
      } catch (err) {
        await this.detach(p, err);
      }
    }
    if (!told) this.applied(events);
    this.notify();
  }

  private advance(p: Projection, position: number): void {
    if (position > (this.positions.get(p.name) ?? 0)) this.positions.set(p.name, position);
  }

  /** A projection that failed follows the log on its own from its checkpoint, retrying. */
  private async detach(p: Projection, err: unknown): Promise<void> {
    this.shared.delete(p);
    this.logger?.error({ err, projection: p.name }, 'projection failed; retrying');
    if (this.stopped) return;
    const sub = await follow(this.store, p, {
      afterBatch: async (position) => {
        this.advance(p, position);
        this.applied(undefined);
        this.notify();
      },
      onError: (e) => this.logger?.error({ err: e, projection: p.name }, 'projection failed; retrying'),
    });
    this.subscriptions.push(sub);
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
    this.stopped = true;
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = null;
    // A catch-up in spans ends after its current span (committed), without subscribing.
    await this.catchingUp;
    // A detach during the stop adds a subscription: stop until none is left.
    while (this.subscriptions.length > 0) await Promise.all(this.subscriptions.splice(0).map((s) => s.stop()));
    this.shared.clear();
  }
}

export interface RebuildOptions {
  /** Events read from the log at a time (each projection applies, and checkpoints, each batch). */
  batchSize?: number;
  /**
   * The read store's transaction: every projection's batches commit together, one commit per
   * `eventsPerTransaction` events, instead of one per projection and batch.
   */
  transaction?: BatchTransaction;
  eventsPerTransaction?: number;
  /**
   * The read store's bulk load (ReadStore.bulkLoad), around the whole rebuild: the store may
   * build secondary indexes once at the end and write each row once per transaction.
   */
  bulkLoad?: BatchTransaction;
}

interface SpanOptions extends RebuildOptions {
  /** Checked between spans: true ends the run early (the runner is stopping). */
  shouldStop?: () => boolean;
  /** After each span, once every projection has applied it. */
  afterSpan?: (position: number) => void;
  onProgress?: (info: { projection: string; position: number; head: number; events: number }) => void;
  head?: number;
}

/**
 * Applies the log after `from` to the projections, in spans: read-model projections commit
 * together, one transaction per span of `eventsPerTransaction` events, inside the read store's
 * bulk load. A projection keeping its checkpoint elsewhere (the search index) must never write
 * while a read-store transaction is open: it applies each span after it committed. When every
 * such projection names the event types it acts on (all small events), the span's events of
 * those types are kept for it as the span is read; otherwise the span is read again from the
 * log (holding a span of large events in memory could take gigabytes). Each projection skips
 * what it applied before (its checkpoint), so projections may start from different positions.
 * What a rebuild and a runner's catch-up at start both use.
 */
async function applyInSpans(store: EventStore, projections: Projection[], from: number, options: SpanOptions): Promise<{ events: number; position: number }> {
  const batchSize = options.batchSize ?? 2000;
  const perTransaction = options.eventsPerTransaction ?? 20_000;
  const grouped = options.transaction ? projections.filter((p) => p.joinsReadStoreTransaction === true) : [];
  const alone = projections.filter((p) => !grouped.includes(p));
  const keptTypes = alone.length > 0 && alone.every((p) => p.eventTypes !== undefined) ? new Set(alone.flatMap((p) => [...p.eventTypes!])) : null;
  const bulkLoad = options.bulkLoad ?? (<R>(fn: () => Promise<R>) => fn());
  const { onProgress } = options;
  const head = options.head ?? 0;
  // Read (and decrypt, upcast) the log once; every projection applies each batch.
  const label = projections.map((p) => p.name).join(', ');
  let position = from;
  let count = 0;
  const applyAlone = async (after: number, to: number, report: boolean) => {
    for (let at = after; at < to; ) {
      const batch = (await store.readAll(at, batchSize)).filter((e) => e.position <= to);
      if (batch.length === 0) break;
      for (const p of alone) await p.apply(batch);
      at = batch[batch.length - 1].position;
      if (report) {
        count += batch.length;
        position = at;
        onProgress?.({ projection: label, position: at, head, events: count });
        options.afterSpan?.(at);
        if (options.shouldStop?.()) break;
      }
    }
  };
  if (grouped.length === 0) {
    await applyAlone(from, Number.MAX_SAFE_INTEGER, true);
    return { events: count, position };
  }
  await bulkLoad(async () => {
    for (let done = false; !done && !options.shouldStop?.(); ) {
      const spanStart = position;
      const countAtStart = count;
      // The span's events the projections applied after it act on, and its last event (so
      // that their checkpoints reach the span's end).
      let kept: RecordedEvent[] = [];
      let last: RecordedEvent | undefined;
      // Batches until `perTransaction` events, in one transaction (a crash rolls back only that span).
      await options.transaction!(async () => {
        // From the span's start, should the transaction run this function again.
        position = spanStart;
        count = countAtStart;
        kept = [];
        for (let inTransaction = 0; inTransaction < perTransaction; ) {
          const batch = await store.readAll(position, batchSize);
          if (batch.length === 0) {
            done = true;
            return;
          }
          for (const p of grouped) await p.apply(batch);
          if (keptTypes) for (const e of batch) if (keptTypes.has(e.type)) kept.push(e);
          last = batch[batch.length - 1];
          position = last.position;
          count += batch.length;
          inTransaction += batch.length;
          if (alone.length === 0) onProgress?.({ projection: label, position, head, events: count });
        }
      });
      if (alone.length && position > spanStart) {
        if (keptTypes && last) {
          if (kept.length === 0 || kept[kept.length - 1] !== last) kept.push(last);
          for (const p of alone) await p.apply(kept);
        } else {
          await applyAlone(spanStart, position, false);
        }
        onProgress?.({ projection: label, position, head, events: count });
      }
      if (position > spanStart) options.afterSpan?.(position);
    }
  });
  return { events: count, position };
}

/**
 * Rebuild projections from position 0 (server stopped). Reports progress after each batch.
 */
export async function rebuildProjections(
  store: EventStore,
  projections: Projection[],
  onProgress?: (info: { projection: string; position: number; head: number; events: number }) => void,
  options: RebuildOptions = {},
): Promise<{ events: number; applied: number; seconds: number }> {
  const started = process.hrtime.bigint();
  const head = await store.headPosition();
  for (const p of projections) await p.reset();
  const { events } = await applyInSpans(store, projections, 0, { ...options, onProgress, head });
  return { events, applied: events * projections.length, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}
