import { randomUUID } from 'node:crypto';
import { clearingKey, readModelProjection } from '../../src/core/projection';
import { RecordedEvent } from '../../src/domain/event';
import { ReadStore } from '../../src/ports/readStore';

interface Doc {
  id: string;
  name: string;
  workspaceId: string;
  size: number;
  tags: string[];
  status: string | null;
  verified: boolean;
  createdAt: string;
}

/**
 * The contract every ReadStore adapter passes. Each test uses collections with random
 * names, so the suite also runs against a shared database.
 */
export function readStoreContract(name: string, make: () => Promise<ReadStore>): void {
  describe(`ReadStore contract: ${name}`, () => {
    let store: ReadStore;
    beforeEach(async () => {
      store = await make();
    });
    afterEach(async () => {
      await store.close();
    });

    const collName = (): string => `c_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    const docs: Doc[] = [
      { id: 'd1', name: 'Alpha Report', workspaceId: 'w1', size: 10, tags: ['t1', 't2'], status: 'READY', verified: true, createdAt: '2024-01-01' },
      { id: 'd2', name: 'beta notes', workspaceId: 'w1', size: 20, tags: ['t2'], status: null, verified: false, createdAt: '2024-01-03' },
      { id: 'd3', name: 'Gamma alphabet', workspaceId: 'w1', size: 30, tags: [], status: 'FAILED', verified: true, createdAt: '2024-01-02' },
      { id: 'd4', name: 'Delta', workspaceId: 'w2', size: 40, tags: ['t3'], status: 'READY', verified: false, createdAt: '2024-01-05' },
      { id: 'd5', name: '100%_done', workspaceId: 'w2', size: 20, tags: ['t1'], status: 'READY', verified: true, createdAt: '2024-01-04' },
    ];
    async function seeded(): Promise<ReturnType<ReadStore['collection']>> {
      const c = store.collection<Doc>(collName(), [{ fields: ['workspaceId'] }, { fields: ['workspaceId', 'createdAt'] }]);
      for (const d of docs) await c.put(d);
      return c;
    }
    const ids = (rows: { id: string }[]): string[] => rows.map((r) => r.id);

    it('puts, gets, replaces and deletes documents by id', async () => {
      const c = store.collection<Doc>(collName());
      expect(await c.get('d1')).toBeNull();
      await c.put(docs[0]);
      expect(await c.get('d1')).toEqual(docs[0]);
      await c.put({ ...docs[0], name: 'Renamed', tags: ['x'] });
      expect(await c.get('d1')).toEqual({ ...docs[0], name: 'Renamed', tags: ['x'] });
      expect(await c.count({})).toBe(1);
      await c.delete('d1');
      expect(await c.get('d1')).toBeNull();
      await c.delete('d1'); // deleting a missing document is not an error
    });

    it('gets many by id, skipping unknown ids', async () => {
      const c = await seeded();
      expect(ids(await c.getMany(['d3', 'nope', 'd1'])).sort()).toEqual(['d1', 'd3']);
      expect(await c.getMany([])).toEqual([]);
    });

    it('finds by equality on strings, numbers, booleans and null', async () => {
      const c = await seeded();
      expect(ids(await c.find({ workspaceId: 'w1' }))).toEqual(['d1', 'd2', 'd3']);
      expect(ids(await c.find({ size: 20 }))).toEqual(['d2', 'd5']);
      expect(ids(await c.find({ verified: true }))).toEqual(['d1', 'd3', 'd5']);
      expect(ids(await c.find({ verified: false, workspaceId: 'w2' }))).toEqual(['d4']);
      expect(ids(await c.find({ status: null }))).toEqual(['d2']);
      expect(ids(await c.find({}))).toEqual(['d1', 'd2', 'd3', 'd4', 'd5']);
    });

    it('finds with $in and $ne', async () => {
      const c = await seeded();
      expect(ids(await c.find({ status: { $in: ['FAILED', 'READY'] } }))).toEqual(['d1', 'd3', 'd4', 'd5']);
      expect(ids(await c.find({ size: { $in: [10, 40] } }))).toEqual(['d1', 'd4']);
      expect(await c.find({ status: { $in: [] } })).toEqual([]);
      // $ne matches documents whose field is null or missing too.
      expect(ids(await c.find({ status: { $ne: 'READY' } }))).toEqual(['d2', 'd3']);
      expect(ids(await c.find({ status: { $ne: null } }))).toEqual(['d1', 'd3', 'd4', 'd5']);
      expect(ids(await c.find({ verified: { $ne: true } }))).toEqual(['d2', 'd4']);
    });

    it('finds with $contains and $containsAny on array fields', async () => {
      const c = await seeded();
      expect(ids(await c.find({ tags: { $contains: 't1' } }))).toEqual(['d1', 'd5']);
      expect(ids(await c.find({ tags: { $containsAny: ['t2', 't3'] } }))).toEqual(['d1', 'd2', 'd4']);
      expect(await c.find({ tags: { $containsAny: [] } })).toEqual([]);
      expect(await c.find({ tags: { $contains: 'none' } })).toEqual([]);
    });

    it('finds with $ilike as a case-insensitive substring, treating wildcards literally', async () => {
      const c = await seeded();
      expect(ids(await c.find({ name: { $ilike: 'ALPHA' } }))).toEqual(['d1', 'd3']);
      expect(ids(await c.find({ name: { $ilike: 'notes' } }))).toEqual(['d2']);
      expect(ids(await c.find({ name: { $ilike: '%_' } }))).toEqual(['d5']);
      expect(ids(await c.find({ name: { $ilike: '.*' } }))).toEqual([]);
    });

    it('finds with range operators on numbers and strings', async () => {
      const c = await seeded();
      expect(ids(await c.find({ size: { $gt: 20 } }))).toEqual(['d3', 'd4']);
      expect(ids(await c.find({ size: { $gte: 20, $lt: 40 } }))).toEqual(['d2', 'd3', 'd5']);
      expect(ids(await c.find({ size: { $lte: 10 } }))).toEqual(['d1']);
      expect(ids(await c.find({ createdAt: { $gte: '2024-01-03' } }))).toEqual(['d2', 'd4', 'd5']);
      expect(ids(await c.find({ createdAt: { $gt: '2024-01-01', $lte: '2024-01-03' }, workspaceId: 'w1' }))).toEqual(['d2', 'd3']);
    });

    it('sorts by one or more fields, with id breaking ties, then skips and limits', async () => {
      const c = await seeded();
      expect(ids(await c.find({}, { sort: [{ field: 'createdAt', direction: 'desc' }] }))).toEqual(['d4', 'd5', 'd2', 'd3', 'd1']);
      expect(ids(await c.find({}, { sort: [{ field: 'size', direction: 'asc' }] }))).toEqual(['d1', 'd2', 'd5', 'd3', 'd4']);
      expect(
        ids(await c.find({}, { sort: [{ field: 'workspaceId', direction: 'desc' }, { field: 'size', direction: 'desc' }] })),
      ).toEqual(['d4', 'd5', 'd3', 'd2', 'd1']);
      const page = { sort: [{ field: 'createdAt', direction: 'asc' as const }] };
      expect(ids(await c.find({}, { ...page, limit: 2 }))).toEqual(['d1', 'd3']);
      expect(ids(await c.find({}, { ...page, skip: 2, limit: 2 }))).toEqual(['d2', 'd5']);
      expect(ids(await c.find({}, { ...page, skip: 4 }))).toEqual(['d4']);
      expect(await c.find({}, { ...page, skip: 10, limit: 5 })).toEqual([]);
    });

    it('counts and deletes by filter', async () => {
      const c = await seeded();
      expect(await c.count({})).toBe(5);
      expect(await c.count({ workspaceId: 'w1', verified: true })).toBe(2);
      expect(await c.count({ tags: { $contains: 't2' } })).toBe(2);
      expect(await c.deleteMany({ workspaceId: 'w2' })).toBe(2);
      expect(await c.count({})).toBe(3);
      expect(await c.deleteMany({ workspaceId: 'w2' })).toBe(0);
      expect(await c.deleteMany({})).toBe(3);
      expect(await c.count({})).toBe(0);
    });

    it('rejects a second document with the same unique key, keeping the first', async () => {
      const c = store.collection<{ id: string; email: string }>(collName(), [{ fields: ['email'], unique: true }]);
      await c.put({ id: 'u1', email: 'a@example.com' });
      // Not `.rejects.toThrow()`: a native driver's error class may come from another jest
      // realm (better-sqlite3 binds its SqliteError once per worker), failing `instanceof Error`.
      const refused = await c.put({ id: 'u2', email: 'a@example.com' }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(refused).not.toBeNull();
      expect(String((refused as { message?: unknown }).message)).toMatch(/unique|duplicate/i);
      await c.put({ id: 'u1', email: 'a@example.com' }); // replacing the same document is fine
      expect(await c.count({})).toBe(1);
      expect(await c.get('u2')).toBeNull();
    });

    it('keeps documents of different collections apart', async () => {
      const a = store.collection<Doc>(collName());
      const b = store.collection<Doc>(collName());
      await a.put(docs[0]);
      expect(await b.get('d1')).toBeNull();
      expect(await b.count({})).toBe(0);
    });

    it('stores checkpoints per projection, 0 when unset', async () => {
      const p = `proj-${randomUUID()}`;
      expect(await store.getCheckpoint(p)).toBe(0);
      await store.setCheckpoint(p, 42);
      await store.setCheckpoint(`${p}-other`, 7);
      expect(await store.getCheckpoint(p)).toBe(42);
      await store.setCheckpoint(p, 43);
      expect(await store.getCheckpoint(p)).toBe(43);
      expect(await store.getCheckpoint(`${p}-other`)).toBe(7);
    });

    it('commits a transaction: documents and checkpoint together, returning its result', async () => {
      const c = store.collection<Doc>(collName());
      const p = `proj-${randomUUID()}`;
      const result = await store.transaction(async () => {
        await c.put(docs[0]);
        await c.put(docs[1]);
        await c.delete('d1');
        await store.setCheckpoint(p, 9);
        // Reads inside the transaction see its own writes.
        expect(await c.get('d2')).toEqual(docs[1]);
        return 'done';
      });
      expect(result).toBe('done');
      expect(ids(await c.find({}))).toEqual(['d2']);
      expect(await store.getCheckpoint(p)).toBe(9);
    });

    it('rolls a transaction back when it throws, checkpoint included', async () => {
      const c = store.collection<Doc>(collName());
      const p = `proj-${randomUUID()}`;
      await c.put(docs[0]);
      await store.setCheckpoint(p, 5);
      await expect(
        store.transaction(async () => {
          await c.put(docs[1]);
          await c.put({ ...docs[0], name: 'changed' });
          await c.deleteMany({ id: 'd1' });
          await store.setCheckpoint(p, 6);
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(await c.get('d2')).toBeNull();
      expect(await c.get('d1')).toEqual(docs[0]);
      expect(await store.getCheckpoint(p)).toBe(5);
      // The store is usable afterwards.
      await store.transaction(async () => c.put(docs[2]));
      expect(ids(await c.find({}))).toEqual(['d1', 'd3']);
    });

    it('runs transactions one after another when started together', async () => {
      const c = store.collection<{ id: string; n: number }>(collName());
      await c.put({ id: 'counter', n: 0 });
      await Promise.all(
        Array.from({ length: 5 }, () =>
          store.transaction(async () => {
            const cur = (await c.get('counter'))!;
            await c.put({ id: 'counter', n: cur.n + 1 });
          }),
        ),
      );
      expect((await c.get('counter'))!.n).toBe(5);
    });

    it('joins a transaction started inside another (its writes roll back with it), also after earlier ones ended; one started elsewhere waits', async () => {
      const c = store.collection<Doc>(collName());
      // Earlier transactions, ended: the next ones must still tell nested calls from others.
      await store.transaction(async () => c.put(docs[0]));
      await store.transaction(async () => c.put(docs[1]));
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      let nestedDone = false;
      const outer = store.transaction(async () => {
        await c.put(docs[2]);
        // Nested (same flow, after an await): joins, so it neither waits for the outer one (a deadlock) nor commits alone.
        await store.transaction(async () => {
          await new Promise((r) => setTimeout(r, 5));
          await c.delete('d1');
        });
        nestedDone = true;
        await gate;
        throw new Error('boom');
      });
      // Started by another flow while the outer one is open: waits for it to end.
      let besideRan = false;
      const beside = store.transaction(async () => {
        besideRan = true;
        return c.get('d1');
      });
      await new Promise((r) => setTimeout(r, 30));
      expect(nestedDone).toBe(true);
      expect(besideRan).toBe(false);
      open();
      await expect(outer).rejects.toThrow('boom');
      // It ran after the rollback: the nested delete is gone with the outer transaction.
      expect(await beside).toEqual(docs[0]);
      expect(ids(await c.find({}))).toEqual(['d1', 'd2']);
    });

    it('inside a bulk load, reads and queries see every write, a rollback keeps none, and the result is what the writes give', async () => {
      const name = collName();
      const c = store.collection<Doc>(name, [{ fields: ['workspaceId'] }, { fields: ['workspaceId', 'createdAt'] }]);
      const p = `proj-${randomUUID()}`;
      const result = await store.bulkLoad(async () => {
        await store.transaction(async () => {
          for (const d of docs) await c.put(d);
          await c.put({ ...docs[0], name: 'renamed' });
          await c.delete('d2');
          await c.put({ ...docs[2], size: 31 });
          await c.delete('d3');
          await c.put({ ...docs[2], size: 32 }); // deleted, then written again
          await store.setCheckpoint(p, 1);
          // Reads by id, by ids and by filter see the transaction's writes.
          expect((await c.get('d1'))?.name).toBe('renamed');
          expect(await c.get('d2')).toBeNull();
          expect((await c.get('d3'))?.size).toBe(32);
          expect(ids(await c.getMany(['d1', 'd2', 'd3'])).sort()).toEqual(['d1', 'd3']);
          expect(ids(await c.find({ workspaceId: 'w1' }, { sort: [{ field: 'createdAt', direction: 'asc' }] }))).toEqual(['d1', 'd3']);
          await c.put({ ...docs[1], workspaceId: 'w3' });
          expect(await c.count({ workspaceId: 'w3' })).toBe(1);
          expect(await c.deleteMany({ workspaceId: 'w2' })).toBe(2);
          expect(await c.get('d4')).toBeNull();
          await c.put({ ...docs[3], name: 'back' });
        });
        await expect(
          store.transaction(async () => {
            await c.put({ ...docs[0], name: 'rolled back' });
            await c.delete('d3');
            await c.put({ ...docs[4], id: 'd9' });
            await store.setCheckpoint(p, 2);
            throw new Error('boom');
          }),
        ).rejects.toThrow('boom');
        // Nested: joins the outer load.
        return store.bulkLoad(async () => (await c.get('d1'))?.name);
      });
      expect(result).toBe('renamed');
      expect(await store.getCheckpoint(p)).toBe(1);
      expect(ids(await c.find({}))).toEqual(['d1', 'd2', 'd3', 'd4']);
      expect((await c.get('d3'))?.size).toBe(32);
      expect((await c.get('d4'))?.name).toBe('back');
      expect(ids(await c.find({ workspaceId: 'w1' }, { sort: [{ field: 'createdAt', direction: 'desc' }] }))).toEqual(['d3', 'd1']);
      expect(await c.count({ workspaceId: 'w3' })).toBe(1);
      expect(await c.get('d9')).toBeNull();
    });

    it('a bulk load whose function throws passes the error on and leaves the store usable', async () => {
      const c = store.collection<Doc>(collName(), [{ fields: ['workspaceId'] }]);
      await expect(
        store.bulkLoad(async () => {
          await store.transaction(async () => c.put(docs[0]));
          throw new Error('load failed');
        }),
      ).rejects.toThrow('load failed');
      expect(ids(await c.find({ workspaceId: 'w1' }))).toEqual(['d1']);
      await c.put(docs[1]);
      expect(await c.count({ workspaceId: 'w1' })).toBe(2);
    });

    it('clears the given collections only', async () => {
      const a = await seeded();
      const keepName = collName();
      const keep = store.collection<Doc>(keepName);
      await keep.put(docs[0]);
      const aName = `c_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
      const named = store.collection<Doc>(aName);
      await named.put(docs[1]);
      await store.clear([aName]);
      expect(await named.count({})).toBe(0);
      expect(await keep.count({})).toBe(1);
      expect(await a.count({})).toBe(5);
      await named.put(docs[2]); // still usable after clear
      expect(ids(await named.find({}))).toEqual(['d3']);
    });

    it('clears a collection larger than one delete batch, outside a transaction', async () => {
      const name = collName();
      const c = store.collection<{ id: string; n: number }>(name, [{ fields: ['n'] }]);
      await store.transaction(async () => {
        for (let i = 0; i < 2500; i++) await c.put({ id: `r${i}`, n: i });
      });
      await store.clear([name]);
      expect(await c.count({})).toBe(0);
      await c.put({ id: 'again', n: 1 }); // indexes and collection still usable
      expect(await c.count({ n: 1 })).toBe(1);
    });

    it('a projection reset cut short by a crash leaves checkpoint 0 and is finished by prepare', async () => {
      const name = collName();
      const projName = `p_${name}`;
      const c = store.collection<{ id: string }>(name);
      let failClear = true;
      const crashing: ReadStore = Object.create(store, {
        clear: {
          value: async (names: string[]) => {
            if (failClear) throw new Error('crash mid-clear');
            return store.clear(names);
          },
        },
      });
      const p = readModelProjection(projName, crashing, [name], async (e, s) => {
        await s.collection<{ id: string }>(name).put({ id: e.id });
      });
      const event = (position: number): RecordedEvent =>
        ({ id: `e${position}`, streamId: 's', revision: position, position, type: 'X', data: {}, metadata: {} }) as unknown as RecordedEvent;
      await p.apply([event(1), event(2)]);
      expect(await p.checkpoint()).toBe(2);
      await expect(p.reset()).rejects.toThrow('crash mid-clear');
      expect(await store.getCheckpoint(projName)).toBe(0); // rebuilds from 0, never skips
      expect(await store.getCheckpoint(clearingKey(projName))).toBe(1);
      failClear = false;
      await p.prepare!();
      expect(await c.count({})).toBe(0);
      expect(await store.getCheckpoint(clearingKey(projName))).toBe(0);
      expect(await p.checkpoint()).toBe(0);
      await p.prepare!(); // nothing left to do: a second start clears nothing
      await p.apply([event(1)]);
      await p.prepare!();
      expect(await c.count({})).toBe(1);
    });
  });
}
