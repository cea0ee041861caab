import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { ProjectionRunner, rebuildProjections } from '../../src/core/projectionRunner';
import { Projection, readModelProjection } from '../../src/core/projection';
import { checkpointedConsumer, eachEvent } from '../../src/core/consumer';
import { EventStore } from '../../src/ports/eventStore';
import { ReadStore } from '../../src/ports/readStore';
import { deferred } from '../support/deferred';

const meta = { actorId: 'u1', authMethod: 'session' as const, correlationId: 'c', occurredAt: '2024-01-01T00:00:00.000Z', schemaVersion: 1 };

/** Counts the log reads a store serves (the runner reads each batch once for all projections). */
function counting(store: EventStore): { store: EventStore; reads: () => number } {
  let reads = 0;
  const wrapped: EventStore = {
    append: (s, e, x) => store.append(s, e, x),
    readStream: (s, r) => store.readStream(s, r),
    readAll: (a, m) => (reads++, store.readAll(a, m)),
    headPosition: () => store.headPosition(),
    subscribe: (a, h, o) => store.subscribe(a, (events) => (reads++, h(events)), o),
    close: () => store.close(),
  };
  return { store: wrapped, reads: () => reads };
}

/** A projection that copies each event's `n` into its own collection, failing on `fail` while `broken()`. */
function notes(store: ReadStore, name: string, broken: () => boolean = () => false): Projection {
  const rows = store.collection<{ id: string; n: number }>(`notes_${name}`);
  return readModelProjection(name, store, [`notes_${name}`], async (e) => {
    const data = e.data as { n: number; fail?: boolean };
    if (data.fail && broken()) throw new Error(`${name} cannot apply this event`);
    await rows.put({ id: e.id, n: data.n });
  });
}

/**
 * A projection keeping its checkpoint outside the read store (as the search index does): it
 * records whether a read-store transaction was open while it applied an event.
 */
function outside(store: SqliteReadStore, seen: { n: number; inTransaction: boolean }[]): Projection {
  let checkpoint = 0;
  return {
    ...checkpointedConsumer({
      name: 'outside',
      checkpoint: { get: async () => checkpoint, set: async (p) => void (checkpoint = p) },
      handle: eachEvent(async (e) => void seen.push({ n: (e.data as { n: number }).n, inTransaction: store.database.inTransaction })),
    }),
    reset: async () => void (checkpoint = 0),
  };
}

describe('ProjectionRunner: one feed for every projection', () => {
  let dir: string;
  let events: SqliteEventStore;
  let store: SqliteReadStore;
  const append = (n: number, extra: object = {}) => events.append(`s-${randomUUID()}`, [{ id: randomUUID(), type: 'Noted', data: { n, ...extra }, metadata: meta }], 'no_stream');
  const ns = async (name: string) => (await store.collection<{ id: string; n: number }>(`notes_${name}`).find({})).map((r) => r.n).sort((a, b) => a - b);
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-runner-'));
    events = new SqliteEventStore(path.join(dir, 'events.db'));
    store = new SqliteReadStore(path.join(dir, 'read.db'));
  });
  afterEach(async () => {
    await events.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reads each batch once for all projections and commits it in one batch transaction', async () => {
    for (let i = 1; i <= 3; i++) await append(i);
    const log = counting(events);
    let transactions = 0;
    const runner = new ProjectionRunner(log.store, [notes(store, 'a'), notes(store, 'b'), notes(store, 'c')], undefined, {
      batchTransaction: (fn) => (transactions++, store.transaction(fn)),
    });
    await runner.start();
    expect(await runner.waitFor(3, 5000)).toBe(true);
    expect(log.reads()).toBe(1);
    expect(transactions).toBe(1);
    for (const name of ['a', 'b', 'c']) expect(await ns(name)).toEqual([1, 2, 3]);
    const r = await append(4);
    expect(await runner.waitFor(r.position, 5000)).toBe(true);
    expect(log.reads()).toBe(2);
    await runner.stop();
    for (const name of ['a', 'b', 'c']) expect(await ns(name)).toEqual([1, 2, 3, 4]);
  });

  it('tells its onApplied listeners of each applied batch, after the read models changed and before waitFor answers', async () => {
    const runner = new ProjectionRunner(events, [notes(store, 'a')], undefined, { batchTransaction: (fn) => store.transaction(fn) });
    const told: { ns: number[]; stored: number[]; afterAnswer: boolean }[] = [];
    let answered = false;
    runner.onApplied((batch) => {
      // Asynchronous reads are not awaited here: what the listener sees is what is stored now.
      const stored = store.database.prepare('SELECT json_extract(doc, \'$.n\') AS n FROM rm_notes_a').all() as { n: number }[];
      told.push({ ns: (batch ?? []).map((e) => (e.data as { n: number }).n), stored: stored.map((r) => r.n).sort((x, y) => x - y), afterAnswer: answered });
    });
    await runner.start();
    const r = await append(1);
    expect(await runner.waitFor(r.position, 5000)).toBe(true);
    answered = true;
    expect(told).toEqual([{ ns: [1], stored: [1], afterAnswer: false }]);
    await runner.stop();
  });

  it('tells its onApplied listeners once the read models committed a batch, not only after the projections applied outside it (a write answered when the wait times out sees no stale cache)', async () => {
    // The search index applies a batch after the read models' commit, and may be slow. A write
    // whose read-your-writes wait times out is answered meanwhile: what caches read models (the
    // authentication cache: a revoked key) must have been told by then, as the store already changed.
    const slow = deferred();
    let checkpoint = 0;
    const slowOutside: Projection = {
      ...checkpointedConsumer({
        name: 'slow-outside',
        checkpoint: { get: async () => checkpoint, set: async (p) => void (checkpoint = p) },
        handle: eachEvent(async () => slow.promise),
      }),
      reset: async () => void (checkpoint = 0),
    };
    const runner = new ProjectionRunner(events, [notes(store, 'a'), slowOutside], undefined, { batchTransaction: (fn) => store.transaction(fn) });
    const told: number[][] = [];
    runner.onApplied((batch) => told.push((batch ?? []).map((e) => (e.data as { n: number }).n)));
    await runner.start();
    const r = await append(1);
    expect(await runner.waitFor(r.position, 300)).toBe(false); // answered by the time-out: the slow projection holds the batch
    expect(await ns('a')).toEqual([1]);
    expect(told).toEqual([[1]]);
    slow.resolve();
    expect(await runner.waitFor(r.position, 5000)).toBe(true);
    expect(told.length).toBeGreaterThanOrEqual(1);
    expect(told.every((ns) => ns.length === 1 && ns[0] === 1)).toBe(true);
    await runner.stop();
  });

  it('starts the feed at the lowest checkpoint; a projection ahead skips what it applied', async () => {
    for (let i = 1; i <= 3; i++) await append(i);
    const ahead = notes(store, 'ahead');
    await ahead.apply(await events.readAll(0, 2));
    const runner = new ProjectionRunner(events, [ahead, notes(store, 'fresh')], undefined, { batchTransaction: (fn) => store.transaction(fn) });
    await runner.start();
    expect(await runner.waitFor(3, 5000)).toBe(true);
    await runner.stop();
    expect(await ns('ahead')).toEqual([1, 2, 3]);
    expect(await ns('fresh')).toEqual([1, 2, 3]);
  });

  it('a failing projection is detached: the others stay current, and it catches up on its own once it can', async () => {
    let broken = true;
    const errors: string[] = [];
    const runner = new ProjectionRunner(events, [notes(store, 'good'), notes(store, 'bad', () => broken), notes(store, 'also')], { error: (o) => errors.push(String((o as { projection?: string }).projection)), info: () => undefined }, {
      batchTransaction: (fn) => store.transaction(fn),
    });
    await runner.start();
    await append(1);
    const failing = await append(2, { fail: true });
    const after = await append(3);
    // The batch transaction rolled back as a whole; the healthy projections applied on their own.
    await new Promise<void>((resolve) => {
      const check = () => (runner.positionOf('good') >= after.position && runner.positionOf('also') >= after.position ? resolve() : setTimeout(check, 10));
      check();
    });
    expect(await ns('good')).toEqual([1, 2, 3]);
    expect(await ns('also')).toEqual([1, 2, 3]);
    expect(runner.positionOf('bad')).toBeLessThan(failing.position);
    expect(errors).toContain('bad');
    expect(await runner.waitFor(after.position, 50)).toBe(false);
    broken = false;
    expect(await runner.waitFor(after.position, 5000)).toBe(true);
    expect(await ns('bad')).toEqual([1, 2, 3]);
    // Later events reach every projection again.
    const last = await append(4);
    expect(await runner.waitFor(last.position, 5000)).toBe(true);
    await runner.stop();
    for (const name of ['good', 'bad', 'also']) expect(await ns(name)).toEqual([1, 2, 3, 4]);
  });

  it('a projection with its checkpoint elsewhere is never applied inside the read-model projections\' transaction (live and in a rebuild)', async () => {
    const seen: { n: number; inTransaction: boolean }[] = [];
    const runner = new ProjectionRunner(events, [notes(store, 'a'), outside(store, seen), notes(store, 'b')], undefined, { batchTransaction: (fn) => store.transaction(fn) });
    await runner.start();
    for (let i = 1; i <= 3; i++) await append(i);
    expect(await runner.waitFor(3, 5000)).toBe(true);
    await runner.stop();
    expect(seen.map((x) => x.n)).toEqual([1, 2, 3]);
    expect(seen.every((x) => !x.inTransaction)).toBe(true);
    seen.length = 0;
    const r = await rebuildProjections(events, [notes(store, 'a'), outside(store, seen)], undefined, { batchSize: 2, transaction: (fn) => store.transaction(fn) });
    expect(r.events).toBe(3);
    expect(seen.map((x) => x.n)).toEqual([1, 2, 3]);
    expect(seen.every((x) => !x.inTransaction)).toBe(true);
    expect(await ns('a')).toEqual([1, 2, 3]);
  });

  it('a rebuild reads the log once when the projection applied after each span names its event types, and it sees those and reaches the head', async () => {
    for (let i = 1; i <= 25; i++) await append(i);
    await events.append(`s-${randomUUID()}`, [{ id: randomUUID(), type: 'Wanted', data: { n: 26 }, metadata: meta }], 'no_stream');
    await append(27);
    const seen: { n: number; inTransaction: boolean }[] = [];
    const picky: Projection = { ...outside(store, seen), eventTypes: new Set(['Wanted']) };
    const { store: counted, reads } = counting(events);
    const r = await rebuildProjections(counted, [notes(store, 'a'), picky], undefined, { batchSize: 4, eventsPerTransaction: 10, transaction: (fn) => store.transaction(fn) });
    expect(r.events).toBe(27);
    // 27 events in batches of 4 and the empty read that ends it: nothing read twice.
    expect(reads()).toBe(8);
    // The Wanted event, and the last event of each span (so its checkpoint reaches each span's end).
    expect(seen.map((x) => x.n)).toEqual([12, 24, 26, 27]);
    expect(seen.every((x) => !x.inTransaction)).toBe(true);
    expect(await picky.checkpoint()).toBe(27);
    expect(await ns('a')).toEqual(Array.from({ length: 27 }, (_, i) => i + 1));
    // Without the types it reads each span again from the log (and sees every event).
    const everything: { n: number; inTransaction: boolean }[] = [];
    const again = counting(events);
    await rebuildProjections(again.store, [notes(store, 'a'), outside(store, everything)], undefined, { batchSize: 4, eventsPerTransaction: 10, transaction: (fn) => store.transaction(fn) });
    expect(again.reads()).toBeGreaterThan(8);
    expect(everything.map((x) => x.n)).toEqual(Array.from({ length: 27 }, (_, i) => i + 1));
  });

  it('a start far behind the log catches up in spans inside a bulk load, then follows the log live', async () => {
    for (let i = 1; i <= 40; i++) await append(i);
    // One projection applied the first 15 events before (its checkpoint), the others none.
    const ahead = notes(store, 'ahead');
    await ahead.apply(await events.readAll(0, 15));
    const seen: { n: number; inTransaction: boolean }[] = [];
    let loads = 0;
    let transactions = 0;
    const { store: counted, reads } = counting(events);
    const runner = new ProjectionRunner(counted, [notes(store, 'behind'), ahead, outside(store, seen)], undefined, {
      batchTransaction: (fn) => (transactions++, store.transaction(fn)),
      bulkLoad: (fn) => (loads++, store.bulkLoad(fn)),
      catchUp: { minEvents: 10, batchSize: 4, eventsPerTransaction: 10 },
    });
    await runner.start();
    expect(await runner.waitFor(40, 5000)).toBe(true);
    expect(loads).toBe(1);
    // Spans of 12 events (3 batches of 4), the last one ending on the empty read: 4 transactions.
    expect(transactions).toBe(4);
    expect(reads()).toBeGreaterThanOrEqual(11);
    const last = await append(41);
    expect(await runner.waitFor(last.position, 5000)).toBe(true);
    await runner.stop();
    const all = Array.from({ length: 41 }, (_, i) => i + 1);
    expect(await ns('behind')).toEqual(all);
    expect(await ns('ahead')).toEqual(all);
    expect(seen.map((x) => x.n)).toEqual(all);
    expect(seen.every((x) => !x.inTransaction)).toBe(true);
  });

  it('a catch-up in spans that fails hands over to the batch-by-batch feed: the healthy projections reach the head, the failing one is detached', async () => {
    for (let i = 1; i <= 30; i++) await append(i, i === 17 ? { fail: true } : {});
    let broken = true;
    const errors: string[] = [];
    const runner = new ProjectionRunner(events, [notes(store, 'good'), notes(store, 'bad', () => broken)], { error: (o) => errors.push(String((o as { projection?: string }).projection ?? 'catch-up')), info: () => undefined }, {
      batchTransaction: (fn) => store.transaction(fn),
      bulkLoad: (fn) => store.bulkLoad(fn),
      catchUp: { minEvents: 10, batchSize: 4, eventsPerTransaction: 8 },
    });
    await runner.start();
    await new Promise<void>((resolve) => {
      const check = () => (runner.positionOf('good') >= 30 ? resolve() : setTimeout(check, 10));
      check();
    });
    expect(await ns('good')).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    // The span holding event 17 rolled back for both; the spans before it stayed.
    expect(runner.positionOf('bad')).toBe(16);
    expect(errors).toEqual(expect.arrayContaining(['catch-up', 'bad']));
    broken = false;
    expect(await runner.waitFor(30, 5000)).toBe(true);
    await runner.stop();
    expect(await ns('bad')).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  });

  it('a start a little behind the log follows it batch by batch (no bulk load), and a stop during a catch-up ends it', async () => {
    for (let i = 1; i <= 5; i++) await append(i);
    let loads = 0;
    const runner = new ProjectionRunner(events, [notes(store, 'near')], undefined, {
      batchTransaction: (fn) => store.transaction(fn),
      bulkLoad: (fn) => (loads++, store.bulkLoad(fn)),
      catchUp: { minEvents: 10 },
    });
    await runner.start();
    expect(await runner.waitFor(5, 5000)).toBe(true);
    await runner.stop();
    expect(loads).toBe(0);
    expect(await ns('near')).toEqual([1, 2, 3, 4, 5]);
    for (let i = 6; i <= 60; i++) await append(i);
    const far = new ProjectionRunner(events, [notes(store, 'far')], undefined, {
      batchTransaction: (fn) => store.transaction(fn),
      bulkLoad: (fn) => (loads++, store.bulkLoad(fn)),
      catchUp: { minEvents: 10, batchSize: 2, eventsPerTransaction: 2 },
    });
    await far.start();
    await far.stop();
    expect(loads).toBe(1);
    // Whatever it applied before the stop is a prefix of the log, checkpointed.
    const applied = await ns('far');
    expect(applied).toEqual(Array.from({ length: applied.length }, (_, i) => i + 1));
    expect(await store.getCheckpoint('far')).toBe(applied.length);
  });

  it('a rebuild in spans of several batches gives what applying event by event gives', async () => {
    for (let i = 1; i <= 25; i++) await append(i);
    const oneByOne = notes(store, 'single');
    for (const e of await events.readAll(0, 100)) await oneByOne.apply([e]);
    let transactions = 0;
    const rebuilt = notes(store, 'rebuilt');
    const r = await rebuildProjections(events, [rebuilt], undefined, { batchSize: 4, eventsPerTransaction: 10, transaction: (fn) => (transactions++, store.transaction(fn)) });
    expect(r.events).toBe(25);
    // Spans of whole batches reaching 10 events: 12 + 12 + 1 (with the empty read that ends it).
    expect(transactions).toBe(3);
    expect(await ns('rebuilt')).toEqual(await ns('single'));
    expect(await rebuilt.checkpoint()).toBe(25);
  });
});
