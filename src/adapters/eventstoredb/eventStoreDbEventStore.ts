import {
  AllStreamSubscription,
  BACKWARDS,
  END,
  EventStoreDBClient,
  FORWARDS,
  Position,
  ReadPosition,
  StreamNotFoundError,
  WrongExpectedVersionError,
  excludeSystemEvents,
} from '@eventstore/db-client';
import { NewEvent, RecordedEvent } from '../../domain/event';
import { Metrics, noMetrics } from '../../ports/metrics';
import {
  AppendResult,
  EventBatchHandler,
  EventStore,
  ExpectedRevision,
  Subscription,
  WrongExpectedRevisionError,
} from '../../ports/eventStore';
import {
  bigintToNumber,
  esdbEventId,
  fromEsdbCurrentRevision,
  fromEsdbEvent,
  positionToNumber,
  readPositionAfter,
  toEsdbExpectedRevision,
  toEventData,
  toStreamName,
} from './eventStoreDbMapping';

export interface EventStoreDbEventStoreOptions {
  /** e.g. `esdb://localhost:2113?tls=false` (KurrentDB accepts `kurrentdb://` only with the newer client). */
  connectionString: string;
  /**
   * Prepended to every stream name; readAll/subscribe/headPosition see only streams with
   * it. Empty by default (every non-system stream is ours). Tests use a random one.
   */
  streamPrefix?: string;
  /** Events read from `$all` per round trip. */
  pageSize?: number;
  /** Delay before a dropped live subscription is re-opened. */
  resubscribeDelayMs?: number;
  /** The log is read at least this often even when the live subscription says nothing (default 5000 ms): a silently dead subscription only slows delivery down. */
  pollIntervalMs?: number;
  /** The client to use (tests hand in a recorder); built from `connectionString` otherwise. */
  client?: EventStoreDBClient;
  /** Append latency and how many appends are in flight together (default: not recorded). */
  metrics?: Pick<Metrics, 'eventStoreAppend' | 'appendsInFlight'>;
}

/**
 * EventStore on EventStoreDB / KurrentDB: one stream per aggregate, the port's global
 * position is the event's `$all` commit position (see eventStoreDbMapping.ts).
 *
 * Idempotency: event ids become EventStoreDB event ids, so a retried append with the same
 * expected revision is acknowledged by the server without a second copy. Because the
 * server's check does not cover a retry whose expected revision is stale, an append that
 * fails its revision check is also checked against the stream: when all of its ids are
 * already there it succeeds, like the embedded store. An 'any' append is not checked first
 * (that would read the whole stream per append): it relies on the server's id check, which
 * is best effort (a retry long after the first attempt may be stored twice).
 *
 * Reading `$all` (readAll, subscribe, headPosition) needs a user allowed to read it: with
 * default ACLs, an admin (`esdb://admin:changeit@host:2113`) or a user given `$all` read.
 */
export class EventStoreDbEventStore implements EventStore {
  private readonly client: EventStoreDBClient;
  private readonly prefix: string;
  private readonly pageSize: number;
  private readonly resubscribeDelayMs: number;
  private readonly pollIntervalMs: number;
  private readonly active = new Set<Subscription>();
  private readonly metrics: Pick<Metrics, 'eventStoreAppend' | 'appendsInFlight'>;
  private inFlight = 0;

  constructor(options: EventStoreDbEventStoreOptions) {
    this.client = options.client ?? EventStoreDBClient.connectionString(options.connectionString);
    this.prefix = options.streamPrefix ?? '';
    this.pageSize = options.pageSize ?? 500;
    this.resubscribeDelayMs = options.resubscribeDelayMs ?? 1000;
    this.pollIntervalMs = options.pollIntervalMs ?? 5000;
    this.metrics = options.metrics ?? noMetrics;
  }

  /**
   * Appends, timed from the call until the server has acknowledged them (or refused them for
   * their expected revision), idempotency look-ups included. The server's own group commit is
   * out of sight: what is recorded instead is how many appends were in flight together.
   */
  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    const started = process.hrtime.bigint();
    this.inFlight++;
    this.metrics.appendsInFlight(this.inFlight);
    let answered = false;
    try {
      const result = await this.appendOnce(streamId, events, expected);
      answered = true;
      return result;
    } catch (err) {
      answered = err instanceof WrongExpectedRevisionError;
      throw err;
    } finally {
      this.inFlight--;
      if (answered) this.metrics.eventStoreAppend(Number(process.hrtime.bigint() - started) / 1e9);
    }
  }

  private async appendOnce(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    const name = toStreamName(this.prefix, streamId);
    // An 'any' append is not preceded by a read of the stream (a long stream would be read
    // whole for every append): the server's own idempotency check on event ids covers a retry.
    if (events.length === 0) {
      const existing = await this.alreadyAppended(name, events);
      if (existing) return existing;
    }
    try {
      const result = await this.client.appendToStream(name, events.map(toEventData), {
        expectedRevision: toEsdbExpectedRevision(expected),
      });
      if (result.position) {
        return { nextRevision: bigintToNumber(result.nextExpectedRevision), position: positionToNumber(result.position) };
      }
      // An idempotent acknowledgement carries no position: find the original events.
      const existing = await this.alreadyAppended(name, events);
      if (existing) return existing;
      throw new Error(`append to ${streamId} returned no position`);
    } catch (err) {
      if (err instanceof WrongExpectedVersionError) {
        const existing = await this.alreadyAppended(name, events);
        if (existing) return existing;
        throw new WrongExpectedRevisionError(streamId, expected, fromEsdbCurrentRevision(err.actualVersion));
      }
      throw err;
    }
  }

  /** The result of an earlier append of the same event ids, or null when none of them is stored. */
  private async alreadyAppended(name: string, events: NewEvent[]): Promise<AppendResult | null> {
    const stored = await this.readStreamByName(name, 0);
    if (events.length === 0) {
      const last = stored[stored.length - 1];
      return { nextRevision: last ? last.revision : -1, position: last ? last.position : await this.headPosition() };
    }
    const byId = new Map(stored.map((e) => [esdbEventId(e.id), e]));
    const found = events.map((e) => byId.get(esdbEventId(e.id)));
    if (found.every((f) => f === undefined)) return null;
    if (found.some((f) => f === undefined)) throw new Error('an append mixed events already stored with new ones');
    const lastOfAppend = found[found.length - 1] as RecordedEvent;
    return { nextRevision: stored[stored.length - 1].revision, position: lastOfAppend.position };
  }

  async readStream(streamId: string, fromRevision = 0, types?: ReadonlySet<string>): Promise<RecordedEvent[]> {
    return this.readStreamByName(toStreamName(this.prefix, streamId), fromRevision, types);
  }

  private async readStreamByName(name: string, fromRevision: number, types?: ReadonlySet<string>): Promise<RecordedEvent[]> {
    const out: RecordedEvent[] = [];
    try {
      for await (const resolved of this.client.readStream(name, { fromRevision: BigInt(fromRevision), direction: FORWARDS })) {
        if (!resolved.event) continue;
        if (types !== undefined && !types.has(resolved.event.type)) continue; // not decoded
        const e = fromEsdbEvent(this.prefix, resolved.event);
        if (e) out.push(e);
      }
    } catch (err) {
      if (err instanceof StreamNotFoundError) return [];
      throw err;
    }
    return out;
  }

  async readAll(afterPosition: number, maxCount: number): Promise<RecordedEvent[]> {
    const out: RecordedEvent[] = [];
    if (maxCount <= 0) return out;
    let from: ReadPosition = readPositionAfter(afterPosition);
    let after = BigInt(afterPosition);
    for (;;) {
      let raw = 0;
      let last: Position | undefined;
      for await (const resolved of this.client.readAll({ fromPosition: from, maxCount: this.pageSize, direction: FORWARDS })) {
        raw++;
        const ev = resolved.event;
        if (!ev) continue;
        last = ev.position;
        if (ev.position.commit <= after) continue;
        const e = fromEsdbEvent(this.prefix, ev, ev.position);
        if (e) out.push(e);
        if (out.length >= maxCount) return out;
      }
      if (raw < this.pageSize || !last) return out;
      from = last;
      after = last.commit;
    }
  }

  async headPosition(): Promise<number> {
    let from: ReadPosition = END;
    let before: bigint | undefined;
    for (;;) {
      let raw = 0;
      let last: Position | undefined;
      for await (const resolved of this.client.readAll({ fromPosition: from, maxCount: this.pageSize, direction: BACKWARDS })) {
        raw++;
        const ev = resolved.event;
        if (!ev) continue;
        last = ev.position;
        if (before !== undefined && ev.position.commit >= before) continue;
        if (fromEsdbEvent(this.prefix, ev, ev.position)) return positionToNumber(ev.position);
      }
      if (raw < this.pageSize || !last) return 0;
      from = last;
      before = last.commit;
    }
  }

  /**
   * Pages through `$all` with readAll (so catch-up and live delivery share one code path
   * and batch size), and uses a live `$all` subscription filtered to non-system events
   * only as a wake-up signal. The subscription is opened before the first read and
   * signals again once confirmed, so no event appended in between is missed.
   */
  subscribe(afterPosition: number, handler: EventBatchHandler, onError?: (err: unknown) => void): Subscription {
    let position = afterPosition;
    let stopped = false;
    let dirty = true;
    let wake: (() => void) | null = null;
    let live: AllStreamSubscription | null = null;
    let retryTimer: NodeJS.Timeout | null = null;
    const signal = (): void => {
      dirty = true;
      const w = wake;
      wake = null;
      w?.();
    };
    const openLive = (): void => {
      if (stopped) return;
      const sub = this.client.subscribeToAll({ fromPosition: END, filter: excludeSystemEvents() });
      live = sub;
      sub.on('confirmation', signal);
      sub.on('data', signal);
      // A subscription that fails, ends or closes (server restart, leader change, idle
      // connection dropped) is opened again once, after a delay; reads catch up meanwhile.
      const dropped = (err?: Error): void => {
        if (stopped || live !== sub) return;
        if (err) onError?.(err);
        live = null;
        retryTimer = setTimeout(() => {
          retryTimer = null;
          openLive();
          signal();
        }, this.resubscribeDelayMs);
      };
      sub.on('error', (err: Error) => dropped(err));
      sub.on('end', () => dropped());
      sub.on('close', () => dropped());
    };
    openLive();
    const loop = (async () => {
      while (!stopped) {
        if (!dirty) {
          // Woken by the live subscription, or by the poll interval if it stays silent.
          await new Promise<void>((resolve) => {
            const t = setTimeout(signal, this.pollIntervalMs);
            wake = () => {
              clearTimeout(t);
              resolve();
            };
            if (dirty || stopped) signal();
          });
          continue;
        }
        dirty = false;
        try {
          for (;;) {
            const batch = await this.readAll(position, this.pageSize);
            if (stopped || batch.length === 0) break;
            await handler(batch);
            position = batch[batch.length - 1].position;
          }
        } catch (err) {
          if (stopped) break;
          onError?.(err);
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, this.resubscribeDelayMs);
            wake = () => {
              clearTimeout(t);
              resolve();
            };
          });
          dirty = true;
        }
      }
    })();
    const subscription: Subscription = {
      stop: async () => {
        if (stopped) return loop;
        stopped = true;
        this.active.delete(subscription);
        if (retryTimer) clearTimeout(retryTimer);
        signal();
        const sub: AllStreamSubscription | null = live;
        live = null;
        if (sub) await sub.unsubscribe().catch(() => undefined);
        await loop;
      },
    };
    this.active.add(subscription);
    return subscription;
  }

  async close(): Promise<void> {
    await Promise.all([...this.active].map((s) => s.stop()));
    await this.client.dispose();
  }
}
