import { MongoClient, MongoServerError } from 'mongodb';
import { MongoKeyStore } from '../../src/adapters/mongodb/mongoKeyStore';

/** A stand-in for the few collection calls MongoKeyStore makes (no server here). */
function fakeClient(): { client: MongoClient; data: Map<string, Map<string, Record<string, unknown>>> } {
  const data = new Map<string, Map<string, Record<string, unknown>>>();
  const coll = (name: string) => {
    if (!data.has(name)) data.set(name, new Map());
    const docs = data.get(name)!;
    return {
      findOne: async (q: { _id: string }) => docs.get(q._id) ?? null,
      insertOne: async (d: { _id: string }) => {
        if (docs.has(d._id)) throw new MongoServerError({ message: 'E11000 duplicate key', code: 11000 });
        docs.set(d._id, d);
      },
      deleteOne: async (q: { _id: string }) => void docs.delete(q._id),
      updateOne: async (q: { _id: string }, u: { $setOnInsert: Record<string, unknown> }) => {
        if (!docs.has(q._id)) docs.set(q._id, { _id: q._id, ...u.$setOnInsert });
      },
    };
  };
  return { client: { db: () => ({ collection: coll }) } as unknown as MongoClient, data };
}

describe('MongoKeyStore (fake collections)', () => {
  it('creates a key once, shares it between processes, and destroys it by deleting the document', async () => {
    const { client, data } = fakeClient();
    const a = new MongoKeyStore({ client, dbName: 'kb' });
    const b = new MongoKeyStore({ client, dbName: 'kb', cacheMs: 0 });
    const key = await a.getOrCreate('d1');
    expect(key?.length).toBe(32);
    expect((await b.getOrCreate('d1'))?.equals(key!)).toBe(true);
    await a.destroy('d1');
    expect(data.get('data_keys')!.has('d1')).toBe(false);
    expect(data.get('data_keys_destroyed')!.has('d1')).toBe(true);
    expect(await b.get('d1')).toBeNull();
    expect(await b.isDestroyed('d1')).toBe(true);
    expect(await b.getOrCreate('d1')).toBeNull(); // never created again
  });

  it('a key inserted while another process destroys it is removed again', async () => {
    const { client, data } = fakeClient();
    const store = new MongoKeyStore({ client, dbName: 'kb' });
    const other = new MongoKeyStore({ client, dbName: 'kb' });
    const keys = client.db('kb').collection('data_keys') as unknown as { insertOne: (d: { _id: string }) => Promise<void> };
    const insert = keys.insertOne;
    const db = client.db('kb') as unknown as { collection: (n: string) => unknown };
    const realCollection = db.collection;
    // The destroy lands between getOrCreate's lookup and its insert.
    (client as unknown as { db: () => unknown }).db = () => ({
      collection: (n: string) => {
        const c = realCollection(n) as typeof keys;
        if (n !== 'data_keys') return c;
        return { ...c, insertOne: async (d: { _id: string }) => { await other.destroy(d._id); await insert(d); } };
      },
    });
    const racing = new MongoKeyStore({ client, dbName: 'kb' });
    expect(await racing.getOrCreate('d2')).toBeNull();
    expect(data.get('data_keys')?.has('d2') ?? false).toBe(false);
    expect(await store.isDestroyed('d2')).toBe(true);
  });
});
