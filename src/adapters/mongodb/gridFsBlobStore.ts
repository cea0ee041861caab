import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { GridFSBucket, MongoClient } from 'mongodb';
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
}

/**
 * BlobStore on MongoDB GridFS, content-addressed: the file name is the SHA-256 of the
 * content, computed while streaming. An upload goes to a temporary name first and is
 * renamed once complete (or dropped when that content is already stored), so a blob
 * found by its address is always whole. Past `maxBytes` the upload is aborted (its
 * chunks deleted) and BlobTooLargeError is thrown.
 */
export class GridFsBlobStore implements BlobStore {
  private readonly client: MongoClient;
  private readonly ownsClient: boolean;
  private readonly bucket: GridFSBucket;

  constructor(options: GridFsBlobStoreOptions) {
    if (options.client) {
      this.client = options.client;
      this.ownsClient = false;
    } else if (options.url) {
      this.client = new MongoClient(options.url);
      this.ownsClient = true;
    } else throw new Error('GridFsBlobStore needs a url or a client');
    this.bucket = new GridFSBucket(this.client.db(options.dbName), { bucketName: options.bucketName ?? 'blobs' });
  }

  async put(source: Readable, maxBytes: number): Promise<StoredBlob> {
    const meter = new HashingSizeLimit(maxBytes);
    const upload = this.bucket.openUploadStream(`tmp-${randomUUID()}`, { metadata: { complete: false } });
    try {
      await pipeline(source, meter, upload);
    } catch (err) {
      await upload.abort().catch(() => undefined);
      if (!source.destroyed) source.destroy();
      throw err;
    }
    const sha256 = meter.digest();
    try {
      if (await this.exists(sha256)) {
        await this.bucket.delete(upload.id);
      } else {
        await this.bucket.rename(upload.id, sha256);
      }
    } catch (err) {
      // Not left behind under its temporary name for ever.
      await this.bucket.delete(upload.id).catch(() => undefined);
      throw err;
    }
    return { sha256, size: meter.size };
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

  /** Idempotent; removes every copy (concurrent puts of the same content may leave two). */
  async delete(sha256: string): Promise<void> {
    assertSha(sha256);
    for (const f of await this.bucket.find({ filename: sha256 }).toArray()) await this.bucket.delete(f._id);
  }

  async close(): Promise<void> {
    if (this.ownsClient) await this.client.close();
  }
}
