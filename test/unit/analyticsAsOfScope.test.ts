import { analyticsProjection } from '../../projections/analytics/analyticsProjection';
import { AS_OF_FOLDS_AT_ONCE, AS_OF_WAITING_PER_WORKSPACE, asOfFoldTurns, workspaceAnalytics } from '../../queries/analytics/workspaceAnalytics';
import { TurnQueueFullError } from '../../src/util/fairTurns';
import { deferred } from '../support/deferred';
import { RecordedEvent } from '../../src/domain/event';
import { EventStore } from '../../src/ports/eventStore';
import { analyticsContext, appendHistory, HOURS, START, Step, tempStores, WORKSPACES } from '../support/analyticsHistory';

/** An event store that remembers every event it hands out (readAll and readStream). */
function counting(inner: EventStore): EventStore & { read: RecordedEvent[] } {
  const read: RecordedEvent[] = [];
  return {
    read,
    append: (s, e, x) => inner.append(s, e, x),
    readStream: async (s, from, types) => {
      const got = await inner.readStream(s, from, types);
      read.push(...got);
      return got;
    },
    readAll: async (after, max) => {
      const got = await inner.readAll(after, max);
      read.push(...got);
      return got;
    },
    headPosition: () => inner.headPosition(),
    subscribe: (after, handler, onError) => inner.subscribe(after, handler, onError),
    close: () => inner.close(),
  };
}

describe("analytics asOf reads the workspace's own events only", () => {
  it("a small workspace's asOf answer reads none of a busy tenant's events, and still counts its own", async () => {
    const s = tempStores();
    try {
      const [small, busy, other] = WORKSPACES;
      const steps: Step[] = [];
      const at = (op: Step['op']) => steps.push({ op, advanceMinutes: 7, skewSeconds: 0 });
      // The small workspace: two documents (one run verified, one deleted), two searches.
      at({ kind: 'upload', ws: 0 });
      at({ kind: 'run', doc: 0, reason: 'UPLOADED' });
      at({ kind: 'verify', doc: 0 });
      at({ kind: 'search', ws: 0, channel: 'workspace', latency: 120, hits: [0] });
      // The busy tenant's two workspaces: many documents, runs, searches and link uses.
      for (let i = 0; i < 150; i++) {
        at({ kind: 'upload', ws: 1 + (i % 2) });
        at({ kind: 'run', doc: i + 1, reason: 'UPLOADED' });
        at({ kind: 'chunks', doc: i + 1 });
        at({ kind: i % 3 ? 'verify' : 'fail', doc: i + 1, code: 'CORRUPT' } as Step['op']);
        at({ kind: 'search', ws: 1 + (i % 2), channel: 'link', latency: 40, hits: [i + 1] });
        at({ kind: 'linkUse', ws: 1 + (i % 2) });
      }
      at({ kind: 'upload', ws: 0 });
      at({ kind: 'delete', doc: 151 });
      at({ kind: 'search', ws: 0, channel: 'tool', latency: 80, hits: [] });
      const built = await appendHistory(s.events, s.keys, steps);
      const head = await s.events.headPosition();
      expect(head).toBeGreaterThan(800);
      // The live read model has followed the log.
      const projection = analyticsProjection(s.live);
      await projection.prepare!();
      for (let after = 0; after < head; ) {
        const batch = await s.events.readAll(after, 500);
        await projection.apply(batch);
        after = batch[batch.length - 1].position;
      }

      const store = counting(s.events);
      const ctx = analyticsContext(store, s.live);
      const asOf = new Date(built.last + HOURS);
      const answer = await workspaceAnalytics(ctx, { workspaceId: small, from: new Date(START - HOURS), to: asOf, interval: 'day', asOf });
      expect(answer.documents).toEqual({ added: 2, deleted: 1 });
      expect(answer.processing).toMatchObject({ runs: 1, verified: 1, failed: 0 });
      expect(answer.searches.searches).toBe(2);

      const named = store.read.map((e) => (e.data as { workspaceId?: string }).workspaceId);
      expect(named.filter((w) => w === busy || w === other)).toEqual([]);
      expect(named.every((w) => w === small)).toBe(true);
      // Its documents' events the answer is made of (no text, chunks or vectors), not the log.
      expect(store.read.length).toBeLessThanOrEqual(5);
    } finally {
      await s.close();
    }
  });
});

describe('analytics asOf: a workspace whose history is too large', () => {
  it('is refused with ANALYTICS_RANGE_TOO_LARGE (a 400 in the envelope), with the read model caught up or not', async () => {
    const s = tempStores();
    try {
      const steps: Step[] = [];
      for (let i = 0; i < 4; i++) steps.push({ op: { kind: 'upload', ws: 0 }, advanceMinutes: 1, skewSeconds: 0 }, { op: { kind: 'search', ws: 0, channel: 'workspace', latency: 1, hits: [] }, advanceMinutes: 1, skewSeconds: 0 });
      const built = await appendHistory(s.events, s.keys, steps);
      const r = { workspaceId: WORKSPACES[0], from: new Date(START - HOURS), to: new Date(built.last + HOURS), interval: 'hour' as const, asOf: new Date(built.last + HOURS) };
      const ctx = analyticsContext(s.events, s.live, 5);
      await expect(workspaceAnalytics(ctx, r)).rejects.toMatchObject({ code: 'ANALYTICS_RANGE_TOO_LARGE', details: { maxRows: 5 } });
      const projection = analyticsProjection(s.live);
      await projection.prepare!();
      await projection.apply(await s.events.readAll(0, 100));
      await expect(workspaceAnalytics(ctx, r)).rejects.toMatchObject({ code: 'ANALYTICS_RANGE_TOO_LARGE', details: { maxRows: 5 } });
      expect((await workspaceAnalytics(analyticsContext(s.events, s.live, 8), r)).documents.added).toBe(4);
    } finally {
      await s.close();
    }
  });
});

describe('analytics asOf answers take turns between workspaces', () => {
  it("past its waiting answers a workspace's next is refused at once, while another workspace's answer runs", async () => {
    const s = tempStores();
    try {
      const [busy, other] = WORKSPACES;
      await appendHistory(s.events, s.keys, [{ op: { kind: 'upload', ws: 1 }, advanceMinutes: 0, skewSeconds: 0 }]);
      const ctx = analyticsContext(s.events, s.live);
      const turns = asOfFoldTurns(ctx);
      expect(AS_OF_FOLDS_AT_ONCE).toBeGreaterThan(1);
      // One fold of the busy workspace running (held), and its queue full.
      const hold = deferred();
      const held = [turns.run(busy, () => hold.promise)];
      for (let i = 0; i < AS_OF_WAITING_PER_WORKSPACE; i++) held.push(turns.run(busy, async () => undefined));
      const r = (workspaceId: string) => ({ workspaceId, from: new Date(START - HOURS), to: new Date(START + HOURS), interval: 'hour' as const, asOf: new Date(START + HOURS) });
      await expect(workspaceAnalytics(ctx, r(busy))).rejects.toBeInstanceOf(TurnQueueFullError);
      // The other workspace's answer does not wait behind them.
      const answer = await workspaceAnalytics(ctx, r(other));
      expect(answer.documents).toEqual({ added: 1, deleted: 0 });
      hold.resolve();
      await Promise.all(held);
      expect(turns.load).toEqual({ running: 0, waiting: 0, owners: 0 });
    } finally {
      await s.close();
    }
  });
});
