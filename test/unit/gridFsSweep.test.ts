import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { MongoClient, ObjectId } from 'mongodb';
import { GridFsBlobStore } from '../../src/adapters/mongodb/gridFsBlobStore';

/**
 * The sweep of uploads cut short by a crash, run through the real driver's GridFSBucket over an
 * in-memory Db shaped like mongodb's Db/Collection (the subset GridFS and the adapter call).
 */
type Doc = Record<string, unknown>;
const isOid = (v: unknown): v is ObjectId => v instanceof ObjectId;
const same = (a: unknown, b: unknown): boolean => (isOid(a) && isOid(b) ? a.equals(b) : a instanceof Date && b instanceof Date ? a.getTime() === b.getTime() : a === b);
function matches(doc: Doc, filter: Doc): boolean {
  return Object.entries(filter).every(([k, cond]) => {
    const v = doc[k];
    if (cond === null || typeof cond !== 'object' || isOid(cond) || cond instanceof Date) return same(v, cond);
    return Object.entries(cond as Doc).every(([op, arg]) => {
      if (op === '$eq') return same(v, arg);
      if (op === '$in') return (arg as unknown[]).some((a) => same(v, a));
      if (op === '$lt') return (v as number) < (arg as number);
      if (op === '$regex') return typeof v === 'string' && (arg instanceof RegExp ? arg : new RegExp(String(arg))).test(v);
      throw new Error(`fake: operator ${op}`);
    });
  });
}
class FakeCollection {
  readonly docs: Doc[] = [];
  find(filter: Doc = {}, options: { limit?: number } = {}) {
    const found = this.docs.filter((d) => matches(d, filter)).slice(0, options.limit || undefined);
    return { toArray: async () => found.map((d) => ({ ...d })) };
  }
  async findOne(filter: Doc = {}) {
    const d = this.docs.find((x) => matches(x, filter));
    return d ? { ...d } : null;
  }
  async insertOne(doc: Doc) {
    this.docs.push({ ...doc });
    return { acknowledged: true, insertedId: doc._id };
  }
  async updateOne(filter: Doc, update: { $set: Doc }) {
    const d = this.docs.find((x) => matches(x, filter));
    if (d) Object.assign(d, update.$set);
    return { acknowledged: true, matchedCount: d ? 1 : 0, modifiedCount: d ? 1 : 0 };
  }
  async deleteOne(filter: Doc) {
    const i = this.docs.findIndex((x) => matches(x, filter));
    if (i >= 0) this.docs.splice(i, 1);
    return { acknowledged: true, deletedCount: i >= 0 ? 1 : 0 };
  }
  async deleteMany(filter: Doc) {
    const before = this.docs.length;
    for (let i = this.docs.length - 1; i >= 0; i--) if (matches(this.docs[i], filter)) this.docs.splice(i, 1);
    return { acknowledged: true, deletedCount: before - this.docs.length };
  }
  listIndexes() {
    return { toArray: async () => [] };
  }
  async createIndex() {
    return 'ix';
  }
}
function fakeMongo() {
  const colls = new Map<string, FakeCollection>();
  const coll = (name: string) => {
    if (!colls.has(name)) colls.set(name, new FakeCollection());
    return colls.get(name)!;
  };
  const client = { db: () => ({ collection: coll }) } as unknown as MongoClient;
  return { client, files: coll('blobs.files'), chunks: coll('blobs.chunks'), uploads: coll('blobs.uploads') };
}

const HOUR = 60 * 60 * 1000;
const ago = (ms: number) => new Date(Date.now() - ms);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('GridFsBlobStore: uploads cut short by a crash (real GridFSBucket, in-memory Db)', () => {
  it('a completed put leaves its content under its address, no tmp file and no upload record', async () => {
    const m = fakeMongo();
    const store = new GridFsBlobStore({ client: m.client, dbName: 'kb' });
    const content = Buffer.from('hello gridfs');
    expect(await store.put(Readable.from([content]), 1000)).toEqual({ sha256: sha(content), size: content.length });
    expect(m.files.docs.map((f) => f.filename)).toEqual([sha(content)]);
    expect(m.chunks.docs).toHaveLength(1);
    expect(m.uploads.docs).toEqual([]);
    expect(await store.removeStaleTempFiles(0)).toBe(0);
  });

  it('an upload in flight is recorded with its GridFS id until it settles', async () => {
    const m = fakeMongo();
    const store = new GridFsBlobStore({ client: m.client, dbName: 'kb' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const source = Readable.from(
      (async function* () {
        yield Buffer.from('part one ');
        await gate;
        yield Buffer.from('part two');
      })(),
    );
    const put = store.put(source, 1000);
    await new Promise((r) => setTimeout(r, 20));
    expect(m.uploads.docs).toHaveLength(1);
    release();
    await put;
    expect(m.uploads.docs).toHaveLength(0);
  });

  it('sweeps stale leftovers (chunks without a file, tmp-* files with or without a record) and keeps the rest', async () => {
    const m = fakeMongo();
    const store = new GridFsBlobStore({ client: m.client, dbName: 'kb', minTempAgeMs: HOUR });
    const chunk = (files_id: ObjectId) => m.chunks.insertOne({ _id: new ObjectId(), files_id, n: 0, data: Buffer.from('x') });
    const file = (_id: ObjectId, filename: string, uploadDate: Date) => m.files.insertOne({ _id, filename, uploadDate, length: 1, chunkSize: 255 * 1024 });
    // (a) crash mid-upload: chunks, no files document yet, a stale record
    const a = new ObjectId();
    await m.uploads.insertOne({ _id: a, startedAt: ago(2 * HOUR) });
    await chunk(a);
    // (b) crash between the end of the upload and the rename
    const b = new ObjectId();
    await m.uploads.insertOne({ _id: b, startedAt: ago(2 * HOUR) });
    await file(b, `tmp-${b.toHexString()}`, ago(2 * HOUR));
    await chunk(b);
    // (c) crash after the rename, before the record was dropped: the blob stays
    const c = new ObjectId();
    await m.uploads.insertOne({ _id: c, startedAt: ago(2 * HOUR) });
    await file(c, 'a'.repeat(64), ago(2 * HOUR));
    await chunk(c);
    // (d) a tmp-* file from before records were kept
    const d = new ObjectId();
    await file(d, 'tmp-0b6a3c9e-old', ago(3 * HOUR));
    await chunk(d);
    // (e) and (f): an upload in flight in another process, and a recent tmp file: younger than the floor
    const e = new ObjectId();
    await m.uploads.insertOne({ _id: e, startedAt: ago(5 * 60_000) });
    await chunk(e);
    const f = new ObjectId();
    await file(f, `tmp-${f.toHexString()}`, ago(5 * 60_000));
    await chunk(f);

    // What main.ts asks at start-up (0: everything) is raised to the floor: the bucket is shared.
    expect(await store.removeStaleTempFiles(0)).toBe(3);
    const ids = (docs: Doc[], key: string) => docs.map((x) => (x[key] as ObjectId).toHexString()).sort();
    expect(ids(m.chunks.docs, 'files_id')).toEqual([c, e, f].map((x) => x.toHexString()).sort());
    expect(ids(m.files.docs, '_id')).toEqual([c, f].map((x) => x.toHexString()).sort());
    expect(ids(m.uploads.docs, '_id')).toEqual([e.toHexString()]);
    expect(await store.removeStaleTempFiles(0)).toBe(0); // idempotent
  });
});
