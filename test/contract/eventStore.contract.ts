import { randomUUID } from 'node:crypto';
import { NewEvent, RecordedEvent } from '../../src/domain/event';
import { EventStore, WrongExpectedRevisionError } from '../../src/ports/eventStore';

/**
 * The contract every EventStore adapter passes. Assertions are relative to the log's head
 * at the start of each test and streams have random names, so the suite also runs against
 * a shared server that already holds events.
 */
export function eventStoreContract(name: string, make: () => Promise<EventStore>): void {
  describe(`EventStore contract: ${name}`, () => {
    let store: EventStore;
    let start: number;

    beforeEach(async () => {
      store = await make();
      start = await store.headPosition();
    });

    afterEach(async () => {
      await store.close();
    });

    const stream = (prefix = 'thing'): string => `${prefix}-${randomUUID()}`;
    let counter = 0;
    const event = (type = 'ThingHappened', data: Record<string, unknown> = {}, id: string = randomUUID()): NewEvent => ({
      id,
      type,
      data: { n: ++counter, ...data },
      metadata: {
        actorId: 'user-1',
        authMethod: 'session',
        correlationId: `corr-${counter}`,
        occurredAt: '2024-05-01T10:00:00.000Z',
        schemaVersion: 1,
      },
    });

    /** Collects delivered events until `count` have arrived. */
    function collector(count: number): { events: RecordedEvent[]; done: Promise<void>; handler: (b: RecordedEvent[]) => Promise<void> } {
      const events: RecordedEvent[] = [];
      let resolve!: () => void;
      const done = new Promise<void>((r) => (resolve = r));
      return {
        events,
        done,
        handler: async (batch) => {
          events.push(...batch);
          if (events.length >= count) resolve();
        },
      };
    }

    it('appends to a new stream with no_stream and reads it back in revision order', async () => {
      const s = stream();
      const evs = [event('A'), event('B'), event('C')];
      const result = await store.append(s, evs, 'no_stream');
      expect(result.nextRevision).toBe(2);
      expect(result.position).toBeGreaterThan(start);
      const read = await store.readStream(s);
      expect(read.map((e) => e.type)).toEqual(['A', 'B', 'C']);
      expect(read.map((e) => e.revision)).toEqual([0, 1, 2]);
      expect(read.map((e) => e.id)).toEqual(evs.map((e) => e.id));
      expect(read.every((e) => e.streamId === s)).toBe(true);
      expect(read[2].position).toBe(result.position);
      expect(read[0].position).toBeLessThan(read[1].position);
      expect(read[1].position).toBeLessThan(read[2].position);
    });

    it('round-trips data and metadata', async () => {
      const s = stream();
      const e: NewEvent = {
        id: randomUUID(),
        type: 'DocumentUploaded',
        data: { title: 'Ünïcødé “quotes”', tags: ['a', 'b'], nested: { size: 42, ok: true, none: null } },
        metadata: {
          actorId: null,
          authMethod: 'api_key',
          correlationId: 'corr-xyz',
          occurredAt: '2024-05-02T11:12:13.456Z',
          schemaVersion: 3,
          workspaceId: 'ws-1',
        },
      };
      await store.append(s, [e], 'no_stream');
      const [read] = await store.readStream(s);
      expect(read.id).toBe(e.id);
      expect(read.type).toBe(e.type);
      expect(read.data).toEqual(e.data);
      expect(read.metadata).toEqual(e.metadata);
      const [fromAll] = await store.readAll(start, 10);
      expect(fromAll.metadata).toEqual(e.metadata);
      expect(fromAll.data).toEqual(e.data);
    });

    it('appends with the exact expected revision', async () => {
      const s = stream();
      await store.append(s, [event(), event()], 'no_stream');
      const r = await store.append(s, [event('Next')], 1);
      expect(r.nextRevision).toBe(2);
      const r2 = await store.append(s, [event('Again')], 2);
      expect(r2.nextRevision).toBe(3);
      expect((await store.readStream(s)).map((e) => e.type)).toEqual(['ThingHappened', 'ThingHappened', 'Next', 'Again']);
    });

    it('reads a stream of given types only, in revision order, from a revision', async () => {
      const s = stream();
      await store.append(s, [event('A'), event('B'), event('C'), event('A'), event('B')], 'no_stream');
      expect((await store.readStream(s, 0, new Set(['A', 'C']))).map((e) => [e.type, e.revision])).toEqual([
        ['A', 0],
        ['C', 2],
        ['A', 3],
      ]);
      expect((await store.readStream(s, 1, new Set(['A']))).map((e) => e.revision)).toEqual([3]);
      expect(await store.readStream(s, 0, new Set(['Z']))).toEqual([]);
      expect(await store.readStream(s, 0, new Set())).toEqual([]);
      expect(await store.readStream(stream(), 0, new Set(['A']))).toEqual([]);
    });

    it("appends with 'any' to new and existing streams", async () => {
      const s = stream();
      expect((await store.append(s, [event()], 'any')).nextRevision).toBe(0);
      expect((await store.append(s, [event(), event()], 'any')).nextRevision).toBe(2);
      expect(await store.readStream(s)).toHaveLength(3);
    });

    it('throws WrongExpectedRevisionError on conflicts and stores nothing', async () => {
      const s = stream();
      await store.append(s, [event()], 'no_stream');
      await expect(store.append(s, [event()], 'no_stream')).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await expect(store.append(s, [event()], 5)).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      const err = await store.append(stream(), [event()], 0).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WrongExpectedRevisionError);
      expect((err as WrongExpectedRevisionError).code).toBe('WRONG_EXPECTED_REVISION');
      expect((err as WrongExpectedRevisionError).actual).toBe('no_stream');
      const conflict = (await store.append(s, [event()], 3).catch((e: unknown) => e)) as WrongExpectedRevisionError;
      expect(conflict.streamId).toBe(s);
      expect(conflict.actual).toBe(0);
      expect(await store.readStream(s)).toHaveLength(1);
    });

    it('reads a stream from a revision, and an unknown stream as empty', async () => {
      const s = stream();
      await store.append(s, [event('A'), event('B'), event('C'), event('D')], 'no_stream');
      expect((await store.readStream(s, 2)).map((e) => e.type)).toEqual(['C', 'D']);
      expect(await store.readStream(s, 10)).toEqual([]);
      expect(await store.readStream(stream('missing'))).toEqual([]);
    });

    it('reads all streams in global order from a position with a max count', async () => {
      const a = stream('a');
      const b = stream('b');
      await store.append(a, [event('A1')], 'no_stream');
      await store.append(b, [event('B1'), event('B2')], 'no_stream');
      await store.append(a, [event('A2')], 0);
      const all = await store.readAll(start, 100);
      expect(all.map((e) => e.type)).toEqual(['A1', 'B1', 'B2', 'A2']);
      expect(all.map((e) => e.streamId)).toEqual([a, b, b, a]);
      for (let i = 1; i < all.length; i++) expect(all[i].position).toBeGreaterThan(all[i - 1].position);
      const firstTwo = await store.readAll(start, 2);
      expect(firstTwo.map((e) => e.type)).toEqual(['A1', 'B1']);
      const rest = await store.readAll(firstTwo[1].position, 10);
      expect(rest.map((e) => e.type)).toEqual(['B2', 'A2']);
      expect(await store.readAll(all[3].position, 10)).toEqual([]);
      expect(await store.headPosition()).toBe(all[3].position);
    });

    it('starts with the head position unchanged when nothing is appended and moves it on append', async () => {
      expect(await store.headPosition()).toBe(start);
      const r = await store.append(stream(), [event(), event()], 'no_stream');
      expect(await store.headPosition()).toBe(r.position);
      expect(r.position).toBeGreaterThan(start);
    });

    it('stores an event id once: a retried append succeeds without a second copy', async () => {
      const s = stream();
      const e = event('Once');
      const first = await store.append(s, [e], 'no_stream');
      const retry = await store.append(s, [e], 'no_stream');
      expect(retry.nextRevision).toBe(first.nextRevision);
      expect(retry.position).toBe(first.position);
      const again = await store.append(s, [e], 'any');
      expect(again.nextRevision).toBe(0);
      expect(await store.readStream(s)).toHaveLength(1);
      const all = await store.readAll(start, 100);
      expect(all.filter((x) => x.id === e.id)).toHaveLength(1);
    });

    it('delivers the existing events on subscribe, then new ones as they are appended, in order', async () => {
      const s = stream();
      await store.append(s, [event('E1'), event('E2')], 'no_stream');
      const c = collector(5);
      const sub = store.subscribe(start, c.handler);
      try {
        await store.append(s, [event('E3')], 1);
        await store.append(stream(), [event('E4')], 'no_stream');
        await store.append(s, [event('E5')], 2);
        await c.done;
        expect(c.events.map((e) => e.type)).toEqual(['E1', 'E2', 'E3', 'E4', 'E5']);
        for (let i = 1; i < c.events.length; i++) expect(c.events[i].position).toBeGreaterThan(c.events[i - 1].position);
      } finally {
        await sub.stop();
      }
    });

    it('subscribes from a position after the start, skipping earlier events', async () => {
      const s = stream();
      const r = await store.append(s, [event('Old')], 'no_stream');
      const c = collector(1);
      const sub = store.subscribe(r.position, c.handler);
      try {
        await store.append(s, [event('New')], 0);
        await c.done;
        expect(c.events.map((e) => e.type)).toEqual(['New']);
      } finally {
        await sub.stop();
      }
    });

    it('stops delivering after stop() resolves', async () => {
      const s = stream();
      const c = collector(1);
      const sub = store.subscribe(start, c.handler);
      await store.append(s, [event('Before')], 'no_stream');
      await c.done;
      await sub.stop();
      const seen = c.events.length;
      await store.append(s, [event('After')], 0);
      // A second subscriber sees the event: the log moved on, the stopped one was not called.
      const witness = collector(2);
      const sub2 = store.subscribe(start, witness.handler);
      await witness.done;
      await sub2.stop();
      expect(witness.events.map((e) => e.type)).toEqual(['Before', 'After']);
      expect(c.events).toHaveLength(seen);
      expect(c.events.map((e) => e.type)).toEqual(['Before']);
    });

    it('lets exactly one of several concurrent appends with the same expected revision win', async () => {
      const s = stream();
      await store.append(s, [event()], 'no_stream');
      const attempts = Array.from({ length: 5 }, (_, i) => store.append(s, [event(`Try${i}`)], 0));
      const results = await Promise.allSettled(attempts);
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(4);
      for (const l of lost) expect(l.reason).toBeInstanceOf(WrongExpectedRevisionError);
      const read = await store.readStream(s);
      expect(read).toHaveLength(2);
      expect(read[1].revision).toBe(1);
    });

    it('accepts many concurrent appends to different streams with distinct increasing positions', async () => {
      const streams = Array.from({ length: 25 }, () => stream('many'));
      const results = await Promise.all(streams.map((s, i) => store.append(s, [event(`M${i}`), event(`M${i}b`)], 'no_stream')));
      const positions = results.map((r) => r.position);
      expect(new Set(positions).size).toBe(streams.length);
      const all = await store.readAll(start, 1000);
      expect(all).toHaveLength(streams.length * 2);
      for (let i = 1; i < all.length; i++) expect(all[i].position).toBeGreaterThan(all[i - 1].position);
      // Each append's position is that of its last event, and the two events of one append are adjacent.
      for (const [i, s] of streams.entries()) {
        const own = all.filter((e) => e.streamId === s);
        expect(own.map((e) => e.type)).toEqual([`M${i}`, `M${i}b`]);
        expect(own[1].position).toBe(results[i].position);
        expect(all.indexOf(own[1]) - all.indexOf(own[0])).toBe(1);
      }
    });
  });
}
