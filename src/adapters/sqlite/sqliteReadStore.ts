import Database from 'better-sqlite3';
import { AsyncLocalStorage } from 'node:async_hooks';
import { Collection, FieldCondition, Filter, FindOptions, IndexSpec, ReadDoc, ReadStore } from '../../ports/readStore';

type SqlValue = string | number | null;

const FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;

function field(name: string): string {
  if (!FIELD.test(name)) throw new Error(`invalid field name ${name}`);
  return `json_extract(doc, '$.${name}')`;
}

function sqlValue(v: string | number | boolean | null): SqlValue {
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v;
}

function condition(name: string, c: FieldCondition, params: SqlValue[]): string {
  const f = field(name);
  if (c === null) return `${f} IS NULL`;
  if (typeof c !== 'object') {
    params.push(sqlValue(c));
    return `${f} = ?`;
  }
  if ('$in' in c) {
    if (c.$in.length === 0) return '0';
    params.push(...c.$in);
    return `${f} IN (${c.$in.map(() => '?').join(',')})`;
  }
  if ('$ne' in c) {
    if (c.$ne === null) return `${f} IS NOT NULL`;
    params.push(sqlValue(c.$ne));
    return `(${f} IS NULL OR ${f} <> ?)`;
  }
  if ('$contains' in c) {
    params.push(c.$contains);
    return `EXISTS (SELECT 1 FROM json_each(doc, '$.${name}') WHERE value = ?)`;
  }
  if ('$containsAny' in c) {
    if (c.$containsAny.length === 0) return '0';
    params.push(...c.$containsAny);
    return `EXISTS (SELECT 1 FROM json_each(doc, '$.${name}') WHERE value IN (${c.$containsAny.map(() => '?').join(',')}))`;
  }
  if ('$ilike' in c) {
    params.push(`%${c.$ilike.replace(/[\\%_]/g, (m) => `\\${m}`)}%`);
    return `${f} LIKE ? ESCAPE '\\'`;
  }
  const parts: string[] = [];
  const ops: [keyof typeof c, string][] = [
    ['$gt', '>'],
    ['$gte', '>='],
    ['$lt', '<'],
    ['$lte', '<='],
  ];
  for (const [k, op] of ops) {
    const v = c[k];
    if (v !== undefined) {
      params.push(v);
      parts.push(`${f} ${op} ?`);
    }
  }
  return parts.length ? parts.join(' AND ') : '1';
}

function where(filter: Filter, params: SqlValue[]): string {
  const parts = Object.entries(filter).map(([k, c]) => condition(k, c, params));
  return parts.length ? `WHERE ${parts.join(' AND ')}` : '';
}

class SqliteCollection<T extends ReadDoc> implements Collection<T> {
  private readonly table: string;
  private readonly statements = new Map<string, Database.Statement>();
  /** The statements of the per-row calls projections make most, prepared once. */
  private readonly byId: {
    get: Database.Statement<[string], { doc: string }>;
    put: Database.Statement<[string, string]>;
    delete: Database.Statement<[string]>;
  };
  constructor(
    private readonly database: Database.Database,
    name: string,
  ) {
    this.table = `rm_${name}`;
    this.byId = {
      get: database.prepare(`SELECT doc FROM ${this.table} WHERE id = ?`),
      put: database.prepare(`INSERT INTO ${this.table} (id, doc) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET doc = excluded.doc`),
      delete: database.prepare(`DELETE FROM ${this.table} WHERE id = ?`),
    };
  }

  /** Prepared statements are cached by SQL text: projections run the same few many times. */
  private get db(): { prepare: (sql: string) => Database.Statement } {
    return {
      prepare: (sql: string) => {
        let st = this.statements.get(sql);
        if (!st) {
          st = this.database.prepare(sql);
          if (this.statements.size > 500) this.statements.clear();
          this.statements.set(sql, st);
        }
        return st;
      },
    };
  }

  async get(id: string): Promise<T | null> {
    const row = this.byId.get.get(id);
    return row ? (JSON.parse(row.doc) as T) : null;
  }

  async getMany(ids: string[]): Promise<T[]> {
    if (ids.length === 0) return [];
    const rows = this.db
      .prepare(`SELECT doc FROM ${this.table} WHERE id IN (SELECT value FROM json_each(?))`)
      .all(JSON.stringify(ids)) as { doc: string }[];
    return rows.map((r) => JSON.parse(r.doc) as T);
  }

  async put(doc: T): Promise<void> {
    this.byId.put.run(doc.id, JSON.stringify(doc));
  }

  async delete(id: string): Promise<void> {
    this.byId.delete.run(id);
  }

  async deleteMany(filter: Filter): Promise<number> {
    const params: SqlValue[] = [];
    return this.db.prepare(`DELETE FROM ${this.table} ${where(filter, params)}`).run(...params).changes;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const params: SqlValue[] = [];
    let sql = `SELECT doc FROM ${this.table} ${where(filter, params)}`;
    const sort = options.sort ?? [];
    sql += sort.length
      ? ` ORDER BY ${sort.map((s) => `${field(s.field)} ${s.direction === 'desc' ? 'DESC' : 'ASC'}`).join(', ')}, id`
      : ' ORDER BY id';
    if (options.limit !== undefined) {
      sql += ' LIMIT ? OFFSET ?';
      params.push(options.limit, options.skip ?? 0);
    } else if (options.skip) {
      sql += ' LIMIT -1 OFFSET ?';
      params.push(options.skip);
    }
    const rows = this.db.prepare(sql).all(...params) as { doc: string }[];
    return rows.map((r) => JSON.parse(r.doc) as T);
  }

  async count(filter: Filter): Promise<number> {
    const params: SqlValue[] = [];
    const row = this.db.prepare(`SELECT COUNT(*) AS n FROM ${this.table} ${where(filter, params)}`).get(...params) as { n: number };
    return row.n;
  }
}

/**
 * Read models in one SQLite file: a table per collection holding JSON documents,
 * with expression indexes on the fields queries use. Written only by the projector
 * (one writer), read by the API.
 */
export class SqliteReadStore implements ReadStore {
  private readonly db: Database.Database;
  private readonly collections = new Map<string, SqliteCollection<ReadDoc>>();
  private readonly inTransaction = new AsyncLocalStorage<true>();
  private queue: Promise<unknown> = Promise.resolve();
  /** Top-level transactions running or waiting their turn. */
  private transactions = 0;
  private readonly checkpointStatements: {
    get: Database.Statement<[string], { position: number }>;
    set: Database.Statement<[string, number]>;
  };

  constructor(file: string) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    // Read models are derived from the log and rebuilt from their checkpoint after a crash,
    // so they do not need an fsync per commit.
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    // Deleted read models (a deleted document's text) are zeroed in the file, not just unlinked.
    this.db.pragma('secure_delete = ON');
    this.db.exec('CREATE TABLE IF NOT EXISTS checkpoints (projection TEXT PRIMARY KEY, position INTEGER NOT NULL)');
    this.checkpointStatements = {
      get: this.db.prepare('SELECT position FROM checkpoints WHERE projection = ?'),
      set: this.db.prepare('INSERT INTO checkpoints (projection, position) VALUES (?, ?) ON CONFLICT(projection) DO UPDATE SET position = excluded.position'),
    };
  }

  collection<T extends ReadDoc>(name: string, indexes: IndexSpec[] = []): Collection<T> {
    if (!FIELD.test(name)) throw new Error(`invalid collection name ${name}`);
    let c = this.collections.get(name);
    if (!c) {
      this.db.exec(`CREATE TABLE IF NOT EXISTS rm_${name} (id TEXT PRIMARY KEY, doc TEXT NOT NULL)`);
      for (const idx of indexes) {
        const cols = idx.fields.map(field).join(', ');
        const idxName = `ix_${name}_${idx.fields.join('_')}`;
        this.db.exec(`CREATE ${idx.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${idxName} ON rm_${name} (${cols})`);
      }
      c = new SqliteCollection<ReadDoc>(this.db, name);
      this.collections.set(name, c);
    }
    return c as unknown as Collection<T>;
  }

  async getCheckpoint(projection: string): Promise<number> {
    const row = this.checkpointStatements.get.get(projection);
    return row?.position ?? 0;
  }

  async setCheckpoint(projection: string, position: number): Promise<void> {
    this.checkpointStatements.set.run(projection, position);
  }

  async transaction<R>(fn: () => Promise<R>): Promise<R> {
    // Nested calls join the outer transaction; others wait their turn (one connection).
    if (this.inTransaction.getStore()) return fn();
    const run = async (): Promise<R> => {
      this.db.exec('BEGIN IMMEDIATE');
      try {
        const result = await this.inTransaction.run(true, fn);
        this.db.exec('COMMIT');
        return result;
      } catch (err) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw err;
      }
    };
    this.transactions++;
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    try {
      return await next;
    } finally {
      // No transaction open or waiting: the storage is switched off until the next one (run()
      // switches it on again). While any AsyncLocalStorage is on, node runs a hook for every
      // promise the process creates (measured: ~10% of a command's CPU on the HTTP path, whose
      // requests never open a transaction); nothing needs the store between transactions.
      if (--this.transactions === 0) this.inTransaction.disable();
    }
  }

  async clear(collections: string[]): Promise<void> {
    for (const name of collections) {
      if (!FIELD.test(name)) throw new Error(`invalid collection name ${name}`);
      this.db.exec(`CREATE TABLE IF NOT EXISTS rm_${name} (id TEXT PRIMARY KEY, doc TEXT NOT NULL)`);
      this.db.exec(`DELETE FROM rm_${name}`);
    }
  }

  /** Raw handle for embedded-only tools. */
  get database(): Database.Database {
    return this.db;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
