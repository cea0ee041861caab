import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Collection, Db, GridFSBucket, MongoClient, ObjectId } from 'mongodb';
import { BlobHolds, deferredDelete } from '../../util/blobHolds';
import { BlobStore, StoredBlob } from '../../ports/blobStore';
import { BlobNotFoundError } from '../fs/fsBlobStore';
import { HashingSizeLimit } from './hashingSizeLimit';

const SHA256_HEX = /^[0-9a-f]{64}$/;

function assertSha(sha256: string): void {
  if (!SHA256_HEX.test(sha256)) throw new TypeError(`not a sha256 hex digest: ${JSON.stringify(sha256)}`);
}

export interface GridFsBlobStoreOptions {
  url?: string;
  client?: MongoClient;
  dbName: string;
  /** GridFS bucket (collections `<bucket>.files` / `<bucket>.chunks`); default `blobs`. */
  bucketName?: string;
  /**
   * `removeStaleTempFiles` never removes an upload younger than this, whatever it is asked:
   * the bucket is shared by every server process, so an upload in flight elsewhere must
   * outlive the sweep. Keep it above the longest upload (KB_UPLOAD_TIMEOUT_MS); default 1 h.
   */
  minTempAgeMs?: number;
}

/** One upload under way (or cut short by a crash): `<bucket>.uploads`, keyed by the GridFS file id. */
interface PendingUpload {
  _id: ObjectId;
  startedAt: Date;
}

const TEMP_NAME = /^tmp-/;

/**
 * BlobStore on MongoDB GridFS, content-addressed: the file name is the SHA-256 of the
 * content, computed while streaming. An upload goes to a temporary name first and is
 * renamed once complete (or dropped when that content is already stored), so a blob
 * found by its address is always whole. Past `maxBytes` the upload is aborted (its
 * chunks deleted) and BlobTooLargeError is thrown.
 *
 * A crash mid-upload leaves chunks with no files document (the driver writes that at the
 * end), and a crash between the end and the rename leaves a `tmp-*` file: each upload is
 * recorded in `<bucket>.uploads` until it is settled, and `removeStaleTempFiles` (run at
 * start-up) removes what stale records and stale `tmp-*` files left.
 */
export class GridFsBlobStore implements BlobStore {
  private readonly holds = new BlobHolds();
  private readonly client: MongoClient;
  private readonly ownsClient: boolean;
  private readonly bucket: GridFSBucket;
  private readonly db: Db;
  private readonly bucketName: string;
  private readonly minTempAgeMs: number;

  constructor(options: GridFsBlobStoreOptions) {
    if (options.client) {
      this.client = options.client;
      this.ownsClient = false;
    } else if (options.url) {
      this.client = new MongoClient(options.url);
      this.ownsClient = true;
    } else throw new Error('GridFsBlobStore needs a url or a client');
    this.bucketName = options.bucketName ?? 'blobs';
    this.minTempAgeMs = options.minTempAgeMs ?? 60 * 60 * 1000;
    this.db = this.client.db(options.dbName);
    this.bucket = new GridFSBucket(this.db, { bucketName: this.bucketName });
  }

  private get uploads(): Collection<PendingUpload> {
    return this.db.collection<PendingUpload>(`${this.bucketName}.uploads`);
  }

  async put(source: Readable, maxBytes: number): Promise<StoredBlob> {
    const meter = new HashingSizeLimit(maxBytes);
    const id = new ObjectId();
    await this.uploads.insertOne({ _id: id, startedAt: new Date() });
    try {
      const upload = this.bucket.openUploadStreamWithId(id, `tmp-${id.toHexString()}`, { metadata: { complete: false } });
      try {
        await pipeline(source, meter, upload);
      } catch (err) {
        await upload.abort().catch(() => undefined);
        if (!source.destroyed) source.destroy();
        throw err;
      }
      const sha256 = meter.digest();
      // Held before it is looked up: a delete from now on leaves it (see BlobStore.put).
      this.holds.hold(sha256);
      try {
        if (await this.exists(sha256)) {
          await this.bucket.delete(id);
        } else {
          await this.bucket.rename(id, sha256);
        }
      } catch (err) {
        this.holds.release(sha256);
        // Not left behind under its temporary name for ever.
        await this.bucket.delete(id).catch(() => undefined);
        throw err;
      }
      return { sha256, size: meter.size };
    } finally {
      // Settled (stored, dropped or aborted); a crash before this line is what the sweep is for.
      await this.uploads.deleteOne({ _id: id }).catch(() => undefined);
    }
  }

  /**
   * Removes what uploads cut short by a crash left, once older than `olderThanMs` and never
   * younger than `minTempAgeMs` (other processes share the bucket): chunks and `tmp-*` files
   * of stale upload records, and stale `tmp-*` files without a record (from before records
   * were kept). A record whose file was already renamed to its address is only dropped.
   * Returns how many uploads were removed.
   */
  async removeStaleTempFiles(olderThanMs = this.minTempAgeMs): Promise<number> {
    const cutoff = new Date(Date.now() - Math.max(olderThanMs, this.minTempAgeMs));
    const files = this.db.collection<{ _id: ObjectId; filename: string }>(`${this.bucketName}.files`);
    const chunks = this.db.collection<{ files_id: ObjectId }>(`${this.bucketName}.chunks`);
    let removed = 0;
    for (const rec of await this.uploads.find({ startedAt: { $lt: cutoff } }).toArray()) {
      const file = await files.findOne({ _id: rec._id });
      if (!file || TEMP_NAME.test(file.filename)) {
        if (file) await files.deleteOne({ _id: rec._id, filename: { $regex: TEMP_NAME } });
        // Chunks only once no files document claims them (a renamed file keeps its own).
        if (!(await files.findOne({ _id: rec._id }))) await chunks.deleteMany({ files_id: rec._id });
        removed++;
      }
      await this.uploads.deleteOne({ _id: rec._id });
    }
    for (const f of await this.bucket.find({ filename: { $regex: TEMP_NAME }, uploadDate: { $lt: cutoff } }).toArray()) {
      await this.bucket.delete(f._id).catch(() => undefined); // gone already: removed by another process's sweep
      removed++;
    }
    return removed;
  }

  async get(sha256: string): Promise<Readable> {
    assertSha(sha256);
    if (!(await this.exists(sha256))) throw new BlobNotFoundError(sha256);
    return this.bucket.openDownloadStreamByName(sha256);
  }

  async exists(sha256: string): Promise<boolean> {
    assertSha(sha256);
    return (await this.bucket.find({ filename: sha256 }, { limit: 1 }).toArray()).length > 0;
  }

  release(sha256: string): void {
    this.holds.release(sha256);
  }

  /** Idempotent; removes every copy (concurrent puts of the same content may leave two); not while a put of this process holds it. */
  async delete(sha256: string, options: { stillUnused?: () => Promise<boolean> } = {}): Promise<boolean> {
    assertSha(sha256);
    if (this.holds.isHeld(sha256)) {
      const { stillUnused } = options;
      if (stillUnused) this.holds.defer(sha256, () => void deferredDelete(this, sha256, stillUnused));
      return false;
    }
    for (const f of await this.bucket.find({ filename: sha256 }).toArray()) await this.bucket.delete(f._id);
    return true;
  }

  async close(): Promise<void> {
    if (this.ownsClient) await this.client.close();
  }
}
