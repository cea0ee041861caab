import { AsyncLocalStorage } from 'node:async_hooks';
import { ClientSession, Collection as MongoCollection, Db, Document, MongoClient } from 'mongodb';
import { Collection, Filter, FindOptions, IndexSpec, ReadDoc, ReadStore } from '../../ports/readStore';
import { mongoField, toMongoFilter, toMongoSort } from './mongoFilter';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const CHECKPOINTS = 'checkpoints';

interface StoredDoc extends Document {
  _id: string;
}
interface CheckpointDoc {
  _id: string;
  position: number;
}

type SessionSource = () => { session?: ClientSession };

function fromStored<T extends ReadDoc>(stored: StoredDoc): T {
  const { _id, ...rest } = stored;
  return { ...rest, id: _id } as unknown as T;
}

class MongoReadCollection<T extends ReadDoc> implements Collection<T> {
  constructor(
    private readonly coll: MongoCollection<StoredDoc>,
    private readonly ready: Promise<unknown>,
    private readonly opts: SessionSource,
  ) {}

  async get(id: string): Promise<T | null> {
    await this.ready;
    const doc = await this.coll.findOne({ _id: id }, this.opts());
    return doc ? fromStored<T>(doc) : null;
  }

  async getMany(ids: string[]): Promise<T[]> {
    if (ids.length === 0) return [];
    await this.ready;
    const docs = await this.coll.find({ _id: { $in: ids } }, this.opts()).toArray();
    return docs.map((d) => fromStored<T>(d));
  }

  async put(doc: T): Promise<void> {
    await this.ready;
    const { id, ...rest } = doc;
    await this.coll.replaceOne({ _id: id }, { ...rest, _id: id }, { ...this.opts(), upsert: true });
  }

  async delete(id: string): Promise<void> {
    await this.ready;
    await this.coll.deleteOne({ _id: id }, this.opts());
  }

  async deleteMany(filter: Filter): Promise<number> {
    await this.ready;
    return (await this.coll.deleteMany(toMongoFilter(filter), this.opts())).deletedCount;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    await this.ready;
    let cursor = this.coll.find(toMongoFilter(filter), this.opts()).sort(toMongoSort(options.sort));
    if (options.skip) cursor = cursor.skip(options.skip);
    if (options.limit !== undefined) {
      if (options.limit <= 0) return [];
      cursor = cursor.limit(options.limit);
    }
    return (await cursor.toArray()).map((d) => fromStored<T>(d));
  }

  async count(filter: Filter): Promise<number> {
    await this.ready;
    return this.coll.countDocuments(toMongoFilter(filter), this.opts());
  }
}

export interface MongoReadStoreOptions {
  /** e.g. `mongodb://localhost:27017/?replicaSet=rs0`; ignored when `client` is given. */
  url?: string;
  /** An existing client to share (it is then not closed by `close()`). */
  client?: MongoClient;
  dbName: string;
  /** Documents deleted per operation by `clear` (default 1000). */
  clearBatchSize?: number;
}

/**
 * Read models in MongoDB: one collection per read model (documents keyed by `_id` = the
 * read model's id), indexes from IndexSpec (unique where asked), projection checkpoints
 * in the `checkpoints` collection.
 *
 * `transaction` runs `fn` in a multi-document transaction on a client session; an
 * AsyncLocalStorage carries the session so every collection call made inside `fn`
 * joins it. MongoDB allows transactions only on a replica set or sharded cluster, so
 * a single server must run as a one-node replica set (see docker-compose.yml).
 * `withTransaction` retries `fn` on transient errors, which is safe because projections
 * are idempotent. Transactions are queued one at a time (the port's writers are
 * serialised anyway), which avoids write conflicts between them.
 */
export class MongoReadStore implements ReadStore {
  private readonly client: MongoClient;
  private readonly ownsClient: boolean;
  private readonly db: Db;
  private readonly collections = new Map<string, MongoReadCollection<ReadDoc>>();
  private readonly session = new AsyncLocalStorage<ClientSession>();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly clearBatchSize: number;
  private readonly opts: SessionSource = () => {
    const session = this.session.getStore();
    return session ? { session } : {};
  };

  constructor(options: MongoReadStoreOptions) {
    if (options.client) {
      this.client = options.client;
      this.ownsClient = false;
    } else if (options.url) {
      this.client = new MongoClient(options.url);
      this.ownsClient = true;
    } else throw new Error('MongoReadStore needs a url or a client');
    this.db = this.client.db(options.dbName);
    this.clearBatchSize = options.clearBatchSize ?? 1000;
    if (!Number.isInteger(this.clearBatchSize) || this.clearBatchSize < 1) throw new Error('clearBatchSize must be a positive integer');
  }

  /** Connects eagerly so that configuration errors surface at start-up. */
  async connect(): Promise<this> {
    await this.client.connect();
    return this;
  }

  collection<T extends ReadDoc>(name: string, indexes: IndexSpec[] = []): Collection<T> {
    if (!NAME.test(name) || name === CHECKPOINTS) throw new Error(`invalid collection name ${name}`);
    let c = this.collections.get(name);
    if (!c) {
      const coll = this.db.collection<StoredDoc>(name);
      const ready = Promise.all(
        indexes.map((idx) =>
          coll.createIndex(
            idx.fields.map((f): [string, 1] => [mongoField(f), 1]),
            {
              name: `ix_${idx.fields.join('_')}`,
              unique: idx.unique ?? false,
              // Like SQL, documents without the field do not collide on a unique index.
              ...(idx.unique ? { partialFilterExpression: Object.fromEntries(idx.fields.map((f) => [mongoField(f), { $exists: true }])) } : {}),
            },
          ),
        ),
      );
      ready.catch(() => undefined); // surfaced by the first operation that awaits it
      c = new MongoReadCollection<ReadDoc>(coll, ready, this.opts);
      this.collections.set(name, c);
    }
    return c as unknown as Collection<T>;
  }

  private get checkpoints(): MongoCollection<CheckpointDoc> {
    return this.db.collection<CheckpointDoc>(CHECKPOINTS);
  }

  async getCheckpoint(projection: string): Promise<number> {
    const doc = await this.checkpoints.findOne({ _id: projection }, this.opts());
    return doc?.position ?? 0;
  }

  async setCheckpoint(projection: string, position: number): Promise<void> {
    await this.checkpoints.updateOne({ _id: projection }, { $set: { position } }, { ...this.opts(), upsert: true });
  }

  async transaction<R>(fn: () => Promise<R>): Promise<R> {
    if (this.session.getStore()) return fn(); // nested: join the outer transaction
    const run = async (): Promise<R> => {
      const session = this.client.startSession();
      try {
        // Read concern stays the default ('local'): it lets a first write create a collection inside the transaction.
        return await session.withTransaction(() => this.session.run(session, fn), { writeConcern: { w: 'majority' } });
      } finally {
        await session.endSession();
      }
    };
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * Deletes in batches of `clearBatchSize` documents, each its own operation outside any
   * transaction: a collection of millions would overrun MongoDB's 60 s transaction
   * lifetime if cleared in one. Not atomic (the port says so); refused inside a
   * transaction, where a long delete would hit the same limit.
   */
  async clear(collections: string[]): Promise<void> {
    if (this.session.getStore()) throw new Error('clear runs outside a transaction');
    for (const name of collections) {
      if (!NAME.test(name) || name === CHECKPOINTS) throw new Error(`invalid collection name ${name}`);
      const coll = this.db.collection<StoredDoc>(name);
      for (;;) {
        const batch = await coll.find({}, { projection: { _id: 1 }, sort: { _id: 1 }, limit: this.clearBatchSize }).toArray();
        if (batch.length === 0) break;
        await coll.deleteMany({ _id: { $in: batch.map((d) => d._id) } });
        if (batch.length < this.clearBatchSize) break;
      }
    }
  }

  /**
   * Nothing to arrange: MongoDB maintains its indexes as it goes, and every write is sent as
   * it is made (a rebuild here commits each projection's batch in its own transaction).
   */
  async bulkLoad<R>(fn: () => Promise<R>): Promise<R> {
    return fn();
  }

  async close(): Promise<void> {
    await this.queue;
    if (this.ownsClient) await this.client.close();
  }
}
