import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { checkpointedConsumer, eachEvent, follow, LAZY_CHECKPOINT_EVENTS, readStoreCheckpoint } from '../../src/core/consumer';
import { RecordedEvent } from '../../src/domain/event';

const meta = { actorId: null, authMethod: 'system' as const, correlationId: 'c', occurredAt: new Date(0).toISOString(), schemaVersion: 1 };
const recorded = (position: number, type = 'Tick'): RecordedEvent => ({ id: `e${position}`, type, data: { n: position }, metadata: meta, streamId: 's', revision: position - 1, position });

function memoryCheckpoint() {
  let at = 0;
  return { get: async () => at, set: async (p: number) => void (at = p) };
}

describe('checkpointedConsumer: the one loop every consumer of the log runs', () => {
  it('skips positions it has handled: a replayed or overlapping batch changes nothing', async () => {
    const seen: number[] = [];
    const c = checkpointedConsumer({ name: 't', checkpoint: memoryCheckpoint(), handle: eachEvent(async (e) => void seen.push(e.position)) });
    await c.apply([recorded(1), recorded(2)]);
    await c.apply([recorded(1), recorded(2), recorded(3)]);
    await c.apply([recorded(2), recorded(3)]);
    expect(seen).toEqual([1, 2, 3]);
    expect(await c.checkpoint()).toBe(3);
  });

  it('a failed batch leaves the checkpoint where it was, so the batch is handled again (at least once)', async () => {
    const seen: number[] = [];
    let fail = true;
    const c = checkpointedConsumer({
      name: 't',
      checkpoint: memoryCheckpoint(),
      handle: eachEvent(async (e) => {
        seen.push(e.position);
        if (e.position === 2 && fail) throw new Error('crash');
      }),
    });
    await expect(c.apply([recorded(1), recorded(2)])).rejects.toThrow('crash');
    expect(await c.checkpoint()).toBe(0);
    fail = false;
    await c.apply([recorded(1), recorded(2)]);
    expect(seen).toEqual([1, 2, 1, 2]);
    expect(await c.checkpoint()).toBe(2);
  });

  describe('with eventTypes: batches with nothing to act on cost nothing', () => {
    /** A checkpoint that counts its reads and writes. */
    function countedCheckpoint() {
      const c = { at: 0, gets: 0, sets: 0 };
      return { c, checkpoint: { get: async () => (c.gets++, c.at), set: async (p: number) => void (c.sets++, (c.at = p)) } };
    }

    it('is given only the events of its types; a batch of none neither reads nor writes its checkpoint, nor opens a transaction', async () => {
      const { c, checkpoint } = countedCheckpoint();
      const seen: string[] = [];
      let transactions = 0;
      const consumer = checkpointedConsumer({
        name: 't',
        checkpoint,
        eventTypes: new Set(['Wanted']),
        transaction: async (fn) => (transactions++, fn()),
        handle: eachEvent(async (e) => void seen.push(`${e.type}@${e.position}`)),
      });
      // The first batch reads and stores the checkpoint (it is not known yet).
      await consumer.apply([recorded(1), recorded(2, 'Wanted'), recorded(3)]);
      expect(seen).toEqual(['Wanted@2']);
      expect(c).toEqual({ at: 3, gets: 1, sets: 1 });
      expect(transactions).toBe(1);
      await consumer.apply([recorded(4), recorded(5)]);
      await consumer.apply([recorded(6)]);
      expect(c).toEqual({ at: 3, gets: 1, sets: 1 });
      expect(transactions).toBe(1);
      // The next batch it acts on stores the checkpoint past everything skipped.
      await consumer.apply([recorded(7, 'Wanted'), recorded(8)]);
      expect(seen).toEqual(['Wanted@2', 'Wanted@7']);
      expect(c).toEqual({ at: 8, gets: 2, sets: 2 });
      expect(transactions).toBe(2);
    });

    it(`stores the checkpoint once it lags ${LAZY_CHECKPOINT_EVENTS} events behind, and a restart replays only what it had not stored`, async () => {
      const { c, checkpoint } = countedCheckpoint();
      const seen: number[] = [];
      const make = () => checkpointedConsumer({ name: 't', checkpoint, eventTypes: new Set(['Wanted']), handle: eachEvent(async (e) => void seen.push(e.position)) });
      const consumer = make();
      await consumer.apply([recorded(1)]);
      expect(c.at).toBe(1);
      await consumer.apply([recorded(LAZY_CHECKPOINT_EVENTS)]);
      expect(c.at).toBe(1);
      await consumer.apply([recorded(LAZY_CHECKPOINT_EVENTS + 1)]);
      expect(c.at).toBe(LAZY_CHECKPOINT_EVENTS + 1);
      await consumer.apply([recorded(LAZY_CHECKPOINT_EVENTS + 2)]);
      expect(c.at).toBe(LAZY_CHECKPOINT_EVENTS + 1);
      // A restart: from the stored checkpoint; the skipped event comes again and is skipped again.
      const again = make();
      await again.apply([recorded(LAZY_CHECKPOINT_EVENTS + 2), recorded(LAZY_CHECKPOINT_EVENTS + 3, 'Wanted')]);
      expect(seen).toEqual([LAZY_CHECKPOINT_EVENTS + 3]);
      expect(c.at).toBe(LAZY_CHECKPOINT_EVENTS + 3);
    });

    it('applied again from further back (a rebuild after its checkpoint was reset), it reads the checkpoint again instead of trusting what it stored', async () => {
      const { c, checkpoint } = countedCheckpoint();
      const consumer = checkpointedConsumer({ name: 't', checkpoint, eventTypes: new Set(['Wanted']), handle: eachEvent(async () => undefined) });
      await consumer.apply([recorded(1, 'Wanted'), recorded(2), recorded(3)]);
      await consumer.apply([recorded(4, 'Wanted'), recorded(5)]);
      expect(c.at).toBe(5);
      // Reset (the projection's own reset sets the stored checkpoint to 0), then the log from the start.
      await checkpoint.set(0);
      await consumer.apply([recorded(1), recorded(2), recorded(3)]);
      expect(c.at).toBe(3);
      await consumer.apply([recorded(4), recorded(5)]);
      expect(c.at).toBe(3);
    });

    it('a failed batch it acts on is handled again; the skipped ones before it are not lost', async () => {
      const { c, checkpoint } = countedCheckpoint();
      let fail = true;
      const seen: number[] = [];
      const consumer = checkpointedConsumer({
        name: 't',
        checkpoint,
        eventTypes: new Set(['Wanted']),
        handle: eachEvent(async (e) => {
          seen.push(e.position);
          if (fail) throw new Error('crash');
        }),
      });
      await consumer.apply([recorded(1)]);
      await consumer.apply([recorded(2)]);
      await expect(consumer.apply([recorded(3, 'Wanted')])).rejects.toThrow('crash');
      expect(c.at).toBe(1);
      fail = false;
      await consumer.apply([recorded(3, 'Wanted')]);
      expect(seen).toEqual([3, 3]);
      expect(c.at).toBe(3);
    });
  });

  describe('with a read-store transaction: effects and checkpoint commit together', () => {
    let dir: string;
    let store: SqliteReadStore;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-consumer-'));
      store = new SqliteReadStore(path.join(dir, 'read.db'));
    });
    afterEach(async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('a crash mid-batch rolls back the rows it wrote; the retry writes each row once', async () => {
      const rows = store.collection<{ id: string; n: number }>('rows');
      let fail = true;
      const c = checkpointedConsumer({
        name: 'rows',
        checkpoint: readStoreCheckpoint(store, 'rows'),
        transaction: (fn) => store.transaction(fn),
        handle: eachEvent(async (e) => {
          if (e.position === 3 && fail) throw new Error('crash');
          const prev = await rows.get('count');
          await rows.put({ id: 'count', n: (prev?.n ?? 0) + 1 });
        }),
      });
      await expect(c.apply([recorded(1), recorded(2), recorded(3)])).rejects.toThrow('crash');
      expect(await rows.get('count')).toBeNull();
      expect(await store.getCheckpoint('rows')).toBe(0);
      fail = false;
      await c.apply([recorded(1), recorded(2), recorded(3)]);
      await c.apply([recorded(3)]);
      expect((await rows.get('count'))?.n).toBe(3);
      expect(await store.getCheckpoint('rows')).toBe(3);
    });
  });

  it('follow: catches up from the checkpoint and resumes after a restart without handling anything twice', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-follow-'));
    const log = new SqliteEventStore(path.join(dir, 'events.db'));
    const ev = () => ({ id: randomUUID(), type: 'Tick', data: {}, metadata: meta });
    try {
      await log.append('s', [ev(), ev(), ev()], 'any');
      const checkpoint = memoryCheckpoint();
      const seen: number[] = [];
      const consumer = checkpointedConsumer({ name: 't', checkpoint, handle: eachEvent(async (e) => void seen.push(e.position)) });
      const until = async (n: number) => {
        for (let i = 0; i < 200 && seen.length < n; i++) await new Promise((r) => setTimeout(r, 10));
      };
      let sub = await follow(log, consumer);
      await until(3);
      await sub.stop();
      await log.append('s', [ev(), ev()], 'any');
      sub = await follow(log, consumer); // a restart: from the stored checkpoint
      await until(5);
      await sub.stop();
      expect(seen).toEqual([1, 2, 3, 4, 5]);
    } finally {
      await log.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
