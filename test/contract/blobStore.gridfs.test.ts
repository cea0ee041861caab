import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { GridFSBucket, MongoClient, ObjectId } from 'mongodb';
import { GridFsBlobStore } from '../../src/adapters/mongodb/gridFsBlobStore';
import { BlobTooLargeError } from '../../src/ports/blobStore';

const url = process.env.KB_TEST_MONGODB_URL;

async function readAll(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

if (url) {
  describe('BlobStore: GridFsBlobStore', () => {
    const dbName = `kb_test_blobs_${randomUUID().slice(0, 8)}`;
    let store: GridFsBlobStore;
    beforeAll(() => {
      store = new GridFsBlobStore({ url, dbName });
    });
    afterAll(async () => {
      await store.close();
      const client = await new MongoClient(url).connect();
      await client.db(dbName).dropDatabase();
      await client.close();
    });

    it('stores content under its SHA-256, once, and streams it back', async () => {
      const content = Buffer.alloc(600_000, 'abc');
      const sha = createHash('sha256').update(content).digest('hex');
      const a = await store.put(Readable.from([content.subarray(0, 1000), content.subarray(1000)]), 1_000_000);
      expect(a).toEqual({ sha256: sha, size: content.length });
      expect(await store.put(Readable.from([content]), 1_000_000)).toEqual(a);
      expect(await store.exists(sha)).toBe(true);
      expect((await readAll(await store.get(sha))).equals(content)).toBe(true);
      await store.delete(sha);
      expect(await store.exists(sha)).toBe(false);
      await store.delete(sha);
      await expect(store.get(sha)).rejects.toThrow(/not found/);
    });

    it('refuses content past the limit and keeps nothing of it', async () => {
      const content = Buffer.alloc(5000, 1);
      await expect(store.put(Readable.from([content]), 4999)).rejects.toBeInstanceOf(BlobTooLargeError);
      const client = await new MongoClient(url).connect();
      const files = await client.db(dbName).collection('blobs.files').countDocuments({ filename: /^tmp-/ });
      const records = await client.db(dbName).collection('blobs.uploads').countDocuments({});
      await client.close();
      expect(files).toBe(0);
      expect(records).toBe(0);
    });

    it('sweeps an upload cut short between its end and the rename, once stale, and keeps fresh ones', async () => {
      const client = await new MongoClient(url).connect();
      try {
        const db = client.db(dbName);
        const bucket = new GridFSBucket(db, { bucketName: 'blobs' });
        const leave = async (startedAt: Date): Promise<ObjectId> => {
          const id = new ObjectId();
          await db.collection('blobs.uploads').insertOne({ _id: id, startedAt });
          const up = bucket.openUploadStreamWithId(id, `tmp-${id.toHexString()}`);
          await new Promise<void>((resolve, reject) => up.on('error', reject).end(Buffer.alloc(1000, 7), () => resolve()));
          return id;
        };
        const stale = await leave(new Date(Date.now() - 2 * 60 * 60 * 1000));
        const fresh = await leave(new Date());
        expect(await store.removeStaleTempFiles(0)).toBe(1);
        expect(await db.collection('blobs.chunks').countDocuments({ files_id: stale })).toBe(0);
        expect(await db.collection('blobs.files').countDocuments({ _id: stale })).toBe(0);
        expect(await db.collection('blobs.files').countDocuments({ _id: fresh })).toBe(1);
        await bucket.delete(fresh);
        await db.collection('blobs.uploads').deleteMany({});
      } finally {
        await client.close();
      }
    });
  });
} else {
  describe.skip('BlobStore: GridFsBlobStore (skipped: set KB_TEST_MONGODB_URL)', () => {
    it('needs a server', () => undefined);
  });
}
