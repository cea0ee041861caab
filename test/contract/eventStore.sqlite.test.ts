import { randomUUID } from 'node:crypto';
import fs, { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { eventStoreContract } from './eventStore.contract';

const dir = mkdtempSync(path.join(tmpdir(), 'kb-es-contract-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

eventStoreContract('SqliteEventStore', async () => new SqliteEventStore(path.join(dir, `${randomUUID()}.db`)));

describe('SqliteEventStore durability', () => {
  it('keeps appended events across close and reopen', async () => {
    const file = path.join(dir, 'durable.db');
    const first = new SqliteEventStore(file);
    const metadata = { actorId: 'u', authMethod: 'session' as const, correlationId: 'c', occurredAt: '2024-01-01T00:00:00.000Z', schemaVersion: 1 };
    const ids = [randomUUID(), randomUUID()];
    const appended = await first.append('doc-1', ids.map((id, i) => ({ id, type: `T${i}`, data: { i }, metadata })), 'no_stream');
    await first.close();

    const reopened = new SqliteEventStore(file);
    try {
      expect(await reopened.headPosition()).toBe(appended.position);
      const events = await reopened.readStream('doc-1');
      expect(events.map((e) => e.id)).toEqual(ids);
      expect(events.map((e) => e.data)).toEqual([{ i: 0 }, { i: 1 }]);
      // The stream's revision survived too: appending at revision 1 works, 0 conflicts.
      await expect(reopened.append('doc-1', [{ id: randomUUID(), type: 'T2', data: {}, metadata }], 0)).rejects.toThrow(/expected revision/);
      expect((await reopened.append('doc-1', [{ id: randomUUID(), type: 'T2', data: {}, metadata }], 1)).nextRevision).toBe(2);
    } finally {
      await reopened.close();
    }
  });
});

describe('SqliteEventStore: the WAL is synced off the event loop', () => {
  const metadata = { actorId: 'u', authMethod: 'session' as const, correlationId: 'c', occurredAt: '2024-01-01T00:00:00.000Z', schemaVersion: 1 };
  const newEvent = (i: number) => ({ id: randomUUID(), type: 'T', data: { i }, metadata });
  afterEach(() => jest.restoreAllMocks());

  it('answers an append, and shows it to readers of the log (head included), only once an fdatasync of the WAL begun after its commit has returned', async () => {
    const store = new SqliteEventStore(path.join(dir, `${randomUUID()}.db`));
    const held: (() => void)[] = [];
    const synced: number[] = [];
    const real = fs.fdatasync;
    jest.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
      synced.push(fd);
      held.push(() => real(fd, cb));
    }) as typeof fs.fdatasync);
    try {
      let answered = 0;
      const first = store.append('s-1', [newEvent(1)], 'no_stream').then((r) => (answered++, r));
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
      // Committed to the WAL, sync in flight: not answered, not visible to the log's readers.
      expect(synced).toHaveLength(1);
      expect(answered).toBe(0);
      expect(await store.readAll(0, 10)).toEqual([]);
      // The head includes what was committed when asked, once it is synced.
      let head: number | undefined;
      const asked = store.headPosition().then((h) => (head = h));
      await new Promise((r) => setImmediate(r));
      expect(head).toBeUndefined();
      // The command side reads its stream as committed (the next decision builds on it).
      expect((await store.readStream('s-1')).map((e) => e.data)).toEqual([{ i: 1 }]);
      // A commit made while the first sync runs waits for a second one.
      const second = store.append('s-2', [newEvent(2)], 'no_stream').then((r) => (answered++, r));
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
      expect(synced).toHaveLength(1);
      held.shift()!();
      expect((await first).position).toBe(1);
      expect(await asked).toBe(1);
      expect(answered).toBe(1);
      expect((await store.readAll(0, 10)).map((e) => e.position)).toEqual([1]);
      await new Promise((r) => setImmediate(r));
      expect(synced).toHaveLength(2);
      expect(answered).toBe(1);
      held.shift()!();
      expect((await second).position).toBe(2);
      expect(await store.headPosition()).toBe(2);
    } finally {
      while (held.length) held.shift()!();
      await store.close();
    }
  });

  it('refuses every append once a sync failed, and fails those waiting for it', async () => {
    const store = new SqliteEventStore(path.join(dir, `${randomUUID()}.db`));
    jest.spyOn(fs, 'fdatasync').mockImplementation(((_fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
      setImmediate(() => cb(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' })));
    }) as typeof fs.fdatasync);
    try {
      await expect(store.append('s-1', [newEvent(1)], 'no_stream')).rejects.toThrow(/could not be synced/);
      await expect(store.append('s-2', [newEvent(2)], 'no_stream')).rejects.toThrow(/could not be synced/);
      expect(await store.headPosition()).toBe(0);
    } finally {
      jest.restoreAllMocks();
      await store.close();
    }
  });

  it('followers asking for the same rows each get their own events, and new ones once synced', async () => {
    const store = new SqliteEventStore(path.join(dir, `${randomUUID()}.db`));
    try {
      await store.append('s-1', [newEvent(1)], 'no_stream');
      const a = await store.readAll(0, 10);
      const b = await store.readAll(0, 10);
      expect(b).toEqual(a);
      expect(b[0]).not.toBe(a[0]);
      (a[0].data as { i: number }).i = 99; // one follower's change is not another's
      expect((await store.readAll(0, 10))[0].data).toEqual({ i: 1 });
      await store.append('s-2', [newEvent(2)], 'no_stream');
      expect((await store.readAll(0, 10)).map((e) => e.data)).toEqual([{ i: 1 }, { i: 2 }]);
    } finally {
      await store.close();
    }
  });

  it('with KB_DURABILITY=normal, never syncs per commit', async () => {
    const store = new SqliteEventStore(path.join(dir, `${randomUUID()}.db`), { synchronous: 'normal' });
    const spy = jest.spyOn(fs, 'fdatasync');
    try {
      expect((await store.append('s-1', [newEvent(1)], 'no_stream')).position).toBe(1);
      expect((await store.readAll(0, 10)).map((e) => e.position)).toEqual([1]);
      expect(spy).not.toHaveBeenCalled();
    } finally {
      await store.close();
    }
  });
});
