import { randomBytes } from 'node:crypto';
import { Binary, Collection, Db, MongoClient, MongoServerError } from 'mongodb';
import { KeyStore } from '../../ports/keyStore';

interface KeyDoc {
  _id: string;
  key: Binary;
  createdAt: Date;
}
interface TombstoneDoc {
  _id: string;
  destroyedAt: Date;
}

export interface MongoKeyStoreOptions {
  client: MongoClient;
  dbName: string;
  /** Collection of live keys (default `data_keys`). Tombstones go to `<name>_destroyed`. */
  collection?: string;
  /**
   * How long a key read from MongoDB is reused in this process. Another process (the
   * worker's erasure service) may destroy it meanwhile, so this bounds how long this
   * process can still open that document's text. A destroyed key is cached for good.
   */
  cacheMs?: number;
}

const isDuplicateKey = (err: unknown): boolean => err instanceof MongoServerError && err.code === 11000;

/**
 * KeyStore on MongoDB, shared by every process of the deployment: one document per live
 * data key in `data_keys` ({_id: documentId, key}), and a tombstone without key material in
 * `data_keys_destroyed` for each destroyed one. Destroying a key deletes its document (after
 * writing the tombstone), so a destroyed key is never created again.
 *
 * Races between creating and destroying: destroy writes the tombstone before deleting the
 * key; getOrCreate inserts the key and then checks for a tombstone, deleting its own insert
 * when there is one. Whatever the interleaving, no key survives a destroy.
 *
 * The client is shared with the read store (not closed here).
 */
export class MongoKeyStore implements KeyStore {
  private readonly keys: Collection<KeyDoc>;
  private readonly tombstones: Collection<TombstoneDoc>;
  private readonly cacheMs: number;
  private readonly cache = new Map<string, { key: Buffer | null; until: number }>();

  constructor(options: MongoKeyStoreOptions) {
    const db: Db = options.client.db(options.dbName);
    const name = options.collection ?? 'data_keys';
    this.keys = db.collection<KeyDoc>(name);
    this.tombstones = db.collection<TombstoneDoc>(`${name}_destroyed`);
    this.cacheMs = options.cacheMs ?? 1000;
  }

  private cached(documentId: string): { key: Buffer | null } | null {
    const c = this.cache.get(documentId);
    if (!c) return null;
    if (c.key !== null && c.until <= Date.now()) {
      this.cache.delete(documentId);
      return null;
    }
    return c;
  }

  private remember(documentId: string, key: Buffer | null): void {
    if (this.cache.size > 10_000) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(documentId, { key, until: key === null ? Number.POSITIVE_INFINITY : Date.now() + this.cacheMs });
  }

  /** The stored key, null when destroyed, undefined when there is none yet. */
  private async lookup(documentId: string): Promise<Buffer | null | undefined> {
    const c = this.cached(documentId);
    if (c) return c.key;
    if (await this.tombstones.findOne({ _id: documentId })) {
      this.remember(documentId, null);
      return null;
    }
    const doc = await this.keys.findOne({ _id: documentId });
    if (!doc) return undefined;
    const key = Buffer.from(doc.key.buffer);
    this.remember(documentId, key);
    return key;
  }

  async get(documentId: string): Promise<Buffer | null> {
    return (await this.lookup(documentId)) ?? null;
  }

  async getOrCreate(documentId: string): Promise<Buffer | null> {
    const found = await this.lookup(documentId);
    if (found !== undefined) return found;
    try {
      await this.keys.insertOne({ _id: documentId, key: new Binary(randomBytes(32)), createdAt: new Date() });
    } catch (err) {
      if (!isDuplicateKey(err)) throw err; // another process created it first: use theirs
    }
    if (await this.tombstones.findOne({ _id: documentId })) {
      await this.keys.deleteOne({ _id: documentId });
      this.remember(documentId, null);
      return null;
    }
    this.cache.delete(documentId);
    return (await this.lookup(documentId)) ?? null;
  }

  async destroy(documentId: string): Promise<void> {
    await this.tombstones.updateOne({ _id: documentId }, { $setOnInsert: { destroyedAt: new Date() } }, { upsert: true });
    await this.keys.deleteOne({ _id: documentId });
    this.remember(documentId, null);
  }

  async isDestroyed(documentId: string): Promise<boolean> {
    return (await this.lookup(documentId)) === null;
  }

  async close(): Promise<void> {
    this.cache.clear();
  }
}
