import { MongoClient } from 'mongodb';
import { MongoReadStore } from '../../src/adapters/mongodb/mongoReadStore';

/**
 * `clear` at the level of the calls the adapter makes on the driver (no server here): a fake
 * shaped like mongodb's Db/Collection/ClientSession records each call and its options.
 */
function fakeClient(ids: string[]) {
  const docs = new Set(ids);
  const calls: { op: string; options?: Record<string, unknown>; n?: number }[] = [];
  const coll = {
    find: (_filter: unknown, options: { limit?: number; session?: unknown }) => ({
      toArray: async () => {
        calls.push({ op: 'find', options });
        return [...docs].sort().slice(0, options.limit ?? docs.size).map((_id) => ({ _id }));
      },
    }),
    deleteMany: async (filter: { _id?: { $in: string[] } }, options?: Record<string, unknown>) => {
      const del = filter._id?.$in ?? [...docs];
      for (const id of del) docs.delete(id);
      calls.push({ op: 'deleteMany', options, n: del.length });
      return { acknowledged: true, deletedCount: del.length };
    },
    updateOne: async () => ({ acknowledged: true }),
  };
  const session = {
    withTransaction: async (fn: () => Promise<unknown>) => fn(),
    endSession: async () => undefined,
  };
  const client = { db: () => ({ collection: () => coll }), startSession: () => session } as unknown as MongoClient;
  return { client, docs, calls };
}

describe('MongoReadStore.clear (fake driver)', () => {
  it('deletes in batches, each its own operation with no session (outside any transaction)', async () => {
    const { client, docs, calls } = fakeClient(Array.from({ length: 2500 }, (_, i) => `d${String(i).padStart(5, '0')}`));
    const store = new MongoReadStore({ client, dbName: 'kb', clearBatchSize: 1000 });
    await store.clear(['documents']);
    expect(docs.size).toBe(0);
    const deletes = calls.filter((c) => c.op === 'deleteMany');
    expect(deletes.map((c) => c.n)).toEqual([1000, 1000, 500]);
    expect(calls.every((c) => c.options === undefined || !('session' in c.options))).toBe(true);
  });

  it('refuses to clear inside a transaction (where a long delete would hit the 60 s limit)', async () => {
    const { client, docs } = fakeClient(['a', 'b']);
    const store = new MongoReadStore({ client, dbName: 'kb' });
    await expect(store.transaction(() => store.clear(['documents']))).rejects.toThrow('outside a transaction');
    expect(docs.size).toBe(2);
  });

  it('rejects a batch size that is not a positive integer', () => {
    const { client } = fakeClient([]);
    expect(() => new MongoReadStore({ client, dbName: 'kb', clearBatchSize: 0 })).toThrow('clearBatchSize');
  });
});
