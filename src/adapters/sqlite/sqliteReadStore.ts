import Database from 'better-sqlite3';
import { AsyncLocalStorage } from 'node:async_hooks';
import { ReadStoreWriter, SpanTable, SqlValue } from './readStoreWriter';
import { WalCheckpointer } from './walCheckpointer';
import { Collection, FieldCondition, Filter, FindOptions, IndexSpec, ReadDoc, ReadStore } from '../../ports/readStore';


const FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;

function field(name: string): string {
  if (!FIELD.test(name)) throw new Error(`invalid field name ${name}`);
  return `json_extract(doc, '$.${name}')`;
}

/** The column holding an indexed field's value beside the document (`c_<field>`). */
const columnOf = (name: string): string => `c_${name}`;

/** How a collection names a field in SQL: its own column when indexed, else a JSON path into the document. */
type FieldSql = (name: string) => string;

/**
 * An indexed field's value as `json_extract(doc, '$.field')` gives it, computed from the
 * document before it is written: what old rows hold after the migration that added the column,
 * and what queries compare with (true and false are 1 and 0, an absent field is NULL, an
 * object or array its JSON).
 */
function columnValue(v: unknown): SqlValue {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string' || typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return JSON.stringify(v);
}

function sqlValue(v: string | number | boolean | null): SqlValue {
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v;
}

function condition(name: string, c: FieldCondition, params: SqlValue[], fieldSql: FieldSql): string {
  const f = fieldSql(name);
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

function where(filter: Filter, params: SqlValue[], fieldSql: FieldSql): string {
  const parts = Object.entries(filter).map(([k, c]) => condition(k, c, params, fieldSql));
  return parts.length ? `WHERE ${parts.join(' AND ')}` : '';
}

export interface SqliteReadStoreOptions {
  /** Characters of JSON a bulk load's transaction buffers at most (BULK_BUFFER_CHARS). */
  bulkBufferChars?: number;
  /**
   * `thread` (default for a file): a bulk load's transactions hand their rows to a thread with
   * its own connection, which commits each while the next is projected. `inline`: they commit
   * on this connection. An in-memory store is always inline.
   */
  bulkWriter?: 'thread' | 'inline';
  /** Runs this file's WAL checkpoints on its thread instead of this connection (on the event loop). */
  checkpointer?: WalCheckpointer;
}

/** Rows per multi-row upsert when a bulk load writes its buffered rows. */
const ROWS_PER_INSERT = 64;

/**
 * Characters of JSON a bulk load buffers before writing them out within the transaction: a
 * span's documents may be large (extracted texts), and are held in memory only up to this.
 */
const BULK_BUFFER_CHARS = 32 * 1024 * 1024;

/**
 * What a collection asks of its store during a bulk load. The calls returning a promise return
 * one only when there is something to wait for (the writer thread), so the common case stays
 * synchronous.
 */
interface BulkHost {
  /** True while writes are buffered: inside a transaction of a bulk load. */
  buffering(): boolean;
  /** A collection that buffered a write (of `chars` characters) is flushed before its store commits. */
  buffered(collection: SqliteCollection<ReadDoc>, chars: number): Promise<void> | undefined;
  /**
   * Before a query by filter (or a write by filter): the rows it must see are where the
   * connection sees them, and the collection's deferred indexes are built.
   */
  beforeQuery(collection: string): Promise<void> | undefined;
  /** Before a write straight to SQLite (not buffered): the connection may write. */
  beforeDirectWrite(): Promise<void> | undefined;
  /** Buffered rows may be written out on this connection now (its transaction is open). */
  flushable(): boolean;
}

/** A buffered write: the document's JSON and its indexed fields' values, or null for a delete. */
type PendingRow = { json: string; values: SqlValue[] } | null;

/** The answer of a write that completed at once (shared: no promise per buffered row). */
const DONE: Promise<void> = Promise.resolve();

/** No indexed field: every row of such a collection shares this (empty) list of values. */
const NO_VALUES: SqlValue[] = [];

class SqliteCollection<T extends ReadDoc> implements Collection<T> {
  private readonly table: string;
  /**
   * Writes of the open transaction during a bulk load, by id. Reads by id look here first; a
   * query by filter writes them out first. Written out (each id once) before the transaction
   * commits, dropped if it rolls back.
   */
  private pending = new Map<string, PendingRow>();
  /**
   * The rows of spans handed to the writer thread (a bulk load's earlier transactions) that
   * it has not committed yet, oldest first: reads by id see them before the connection does.
   */
  private handedOff: { span: number; rows: Map<string, PendingRow> }[] = [];
  private putMany: Database.Statement<SqlValue[]> | null = null;
  private readonly statements = new Map<string, Database.Statement>();
  /** The statements of the per-row calls projections make most, prepared once. */
  private readonly byId: {
    get: Database.Statement<[string], { doc: string }>;
    put: Database.Statement<SqlValue[]>;
    delete: Database.Statement<[string]>;
  };
  /** SQL of a field: its column when indexed, else a JSON path. */
  private readonly fieldSql: FieldSql;
  /** Values per row in an upsert: id, doc and one per indexed field. */
  private readonly width: number;
  constructor(
    private readonly database: Database.Database,
    readonly name: string,
    private readonly host: BulkHost,
    /** Writes always go straight to SQLite (a unique index must refuse a write when it is made). */
    private readonly unbuffered: boolean,
    /** The indexed fields, each stored in a column of its own beside the document. */
    private readonly columns: readonly string[],
  ) {
    this.table = `rm_${name}`;
    const own = new Set(columns);
    this.fieldSql = (f) => (own.has(f) ? columnOf(f) : field(f));
    this.width = 2 + columns.length;
    this.byId = {
      get: database.prepare(`SELECT doc FROM ${this.table} WHERE id = ?`),
      put: database.prepare<SqlValue[]>(this.upsertSql(1)),
      delete: database.prepare(`DELETE FROM ${this.table} WHERE id = ?`),
    };
  }

  /** An upsert of `rows` rows: id, doc and the indexed fields' columns. */
  private upsertSql(rows: number): string {
    const names = ['id', 'doc', ...this.columns.map(columnOf)];
    const row = `(${names.map(() => '?').join(', ')})`;
    const set = names
      .slice(1)
      .map((n) => `${n} = excluded.${n}`)
      .join(', ');
    return `INSERT INTO ${this.table} (${names.join(', ')}) VALUES ${Array.from({ length: rows }, () => row).join(', ')} ON CONFLICT(id) DO UPDATE SET ${set}`;
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

  /** A row of the open transaction or of a span not committed yet; undefined when SQLite has the latest. */
  private buffered(id: string): PendingRow | undefined {
    const row = this.pending.get(id);
    if (row !== undefined) return row;
    for (let i = this.handedOff.length - 1; i >= 0; i--) {
      const r = this.handedOff[i].rows.get(id);
      if (r !== undefined) return r;
    }
    return undefined;
  }

  async get(id: string): Promise<T | null> {
    const buffered = this.buffered(id);
    if (buffered !== undefined) return buffered === null ? null : (JSON.parse(buffered.json) as T);
    const row = this.byId.get.get(id);
    return row ? (JSON.parse(row.doc) as T) : null;
  }

  async getMany(ids: string[]): Promise<T[]> {
    if (ids.length === 0) return [];
    // Buffered rows first (the latest writes); the others from SQLite.
    const out: T[] = [];
    const rest: string[] = [];
    for (const id of new Set(ids)) {
      const row = this.buffered(id);
      if (row === undefined) rest.push(id);
      else if (row !== null) out.push(JSON.parse(row.json) as T);
    }
    if (rest.length === 0) return out;
    const rows = this.db
      .prepare(`SELECT doc FROM ${this.table} WHERE id IN (SELECT value FROM json_each(?))`)
      .all(JSON.stringify(rest)) as { doc: string }[];
    for (const r of rows) out.push(JSON.parse(r.doc) as T);
    return out;
  }

  /*
   * put and delete are not `async`: a buffered write (every row of a rebuild, most of them)
   * answers with one shared settled promise instead of a new one per call. Errors still come
   * as a rejected promise, never thrown.
   */
  put(doc: T): Promise<void> {
    let json: string;
    let values = NO_VALUES;
    try {
      json = JSON.stringify(doc);
      if (this.columns.length > 0) {
        values = [];
        for (const c of this.columns) values.push(columnValue((doc as unknown as { [k: string]: unknown })[c]));
      }
      if (this.buffering()) {
        this.pending.set(doc.id, { json, values });
        return this.host.buffered(this as unknown as SqliteCollection<ReadDoc>, json.length) ?? DONE;
      }
    } catch (err) {
      return Promise.reject(err);
    }
    return this.putNow(doc.id, json, values);
  }

  private async putNow(id: string, json: string, values: SqlValue[]): Promise<void> {
    for (let wait = this.host.beforeDirectWrite(); wait; wait = this.host.beforeDirectWrite()) await wait;
    this.byId.put.run(id, json, ...values);
  }

  delete(id: string): Promise<void> {
    try {
      if (this.buffering()) {
        this.pending.set(id, null);
        return this.host.buffered(this as unknown as SqliteCollection<ReadDoc>, id.length) ?? DONE;
      }
    } catch (err) {
      return Promise.reject(err);
    }
    return this.deleteNow(id);
  }

  private async deleteNow(id: string): Promise<void> {
    for (let wait = this.host.beforeDirectWrite(); wait; wait = this.host.beforeDirectWrite()) await wait;
    this.byId.delete.run(id);
  }

  private buffering(): boolean {
    return !this.unbuffered && this.host.buffering();
  }

  /**
   * Hands the buffered rows to the writer thread as part of span `span` (they stay readable
   * by id until it has committed them); returns them as the thread takes them.
   */
  handOff(span: number): SpanTable | null {
    if (this.pending.size === 0) return null;
    const n = this.columns.length;
    const ids: string[] = [];
    const docs: (string | null)[] = [];
    const values: SqlValue[] = [];
    for (const [id, row] of this.pending) {
      ids.push(id);
      if (row === null) {
        docs.push(null);
        for (let k = 0; k < n; k++) values.push(null);
      } else {
        docs.push(row.json);
        for (const v of row.values) values.push(v);
      }
    }
    this.handedOff.push({ span, rows: this.pending });
    this.pending = new Map();
    return { table: this.table, columns: this.columns.map(columnOf), ids, docs, values };
  }

  /** Span `span` has committed: SQLite has its rows, and those of every span before it. */
  committed(span: number): void {
    if (this.handedOff.length > 0 && this.handedOff[0].span <= span) this.handedOff = this.handedOff.filter((h) => h.span > span);
  }

  /** The writer thread failed: the rows it did not commit are gone. */
  forgetHandedOff(): void {
    this.handedOff = [];
  }

  /** Writes the buffered rows out, each once, in id order (neighbouring keys share B-tree pages). */
  flush(): void {
    if (this.pending.size === 0) return;
    const ids = [...this.pending.keys()].sort();
    const puts: SqlValue[] = [];
    const deletes: string[] = [];
    for (const id of ids) {
      const row = this.pending.get(id)!;
      if (row === null) deletes.push(id);
      else puts.push(id, row.json, ...row.values);
    }
    this.pending.clear();
    const whole = ROWS_PER_INSERT * this.width;
    let i = 0;
    if (puts.length >= whole) {
      this.putMany ??= this.database.prepare<SqlValue[]>(this.upsertSql(ROWS_PER_INSERT));
      for (; i + whole <= puts.length; i += whole) this.putMany.run(...puts.slice(i, i + whole));
    }
    for (; i < puts.length; i += this.width) this.byId.put.run(...puts.slice(i, i + this.width));
    for (const id of deletes) this.byId.delete.run(id);
  }

  /** Forgets the buffered writes (their transaction rolled back, or the collection was cleared). */
  discard(): void {
    this.pending.clear();
  }

  /** Before a query by filter: buffered writes out, deferred indexes built. */
  private async beforeQuery(): Promise<void> {
    const wait = this.host.beforeQuery(this.name);
    if (wait) await wait;
    if (this.host.flushable()) this.flush();
  }

  async deleteMany(filter: Filter): Promise<number> {
    await this.beforeQuery();
    for (let wait = this.host.beforeDirectWrite(); wait; wait = this.host.beforeDirectWrite()) await wait;
    const params: SqlValue[] = [];
    return this.db.prepare(`DELETE FROM ${this.table} ${where(filter, params, this.fieldSql)}`).run(...params).changes;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    await this.beforeQuery();
    const params: SqlValue[] = [];
    let sql = `SELECT doc FROM ${this.table} ${where(filter, params, this.fieldSql)}`;
    const sort = options.sort ?? [];
    sql += sort.length
      ? ` ORDER BY ${sort.map((s) => `${this.fieldSql(s.field)} ${s.direction === 'desc' ? 'DESC' : 'ASC'}`).join(', ')}, id`
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
    await this.beforeQuery();
    const params: SqlValue[] = [];
    const row = this.db.prepare(`SELECT COUNT(*) AS n FROM ${this.table} ${where(filter, params, this.fieldSql)}`).get(...params) as { n: number };
    return row.n;
  }
}

const indexName = (collection: string, idx: IndexSpec): string => `ix_${collection}_${idx.fields.join('_')}`;
/** An index on the fields' own columns (`collection()` adds the columns first). */
const createIndexSql = (collection: string, idx: IndexSpec): string =>
  `CREATE ${idx.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${indexName(collection, idx)} ON rm_${collection} (${idx.fields.map(columnOf).join(', ')})`;

/**
 * Read models in one SQLite file: a table per collection holding JSON documents, each
 * indexed field also in a column of its own (`c_<field>`, written with the row), which the
 * indexes cover and queries use. Written only by the projector (one writer), read by the API.
 *
 * A bulk load (a rebuild) drops the non-unique indexes of the collections that are empty
 * when it begins and builds each once, at the end or at the first query by filter on its
 * collection, whichever comes first; and inside its transactions every collection without
 * a unique index buffers its writes (the latest per id), writing each row once, in id order,
 * before the commit. With the writer thread (`bulkWriter: 'thread'`), the load's own
 * transactions are committed by that thread, in order, while the next one runs (see
 * `handOff` and `goDirect`). A process that dies during the load leaves whole transactions
 * only, and tables without some of their indexes: `collection()` creates missing indexes at
 * every open.
 */
export class SqliteReadStore implements ReadStore {
  private readonly db: Database.Database;
  private readonly collections = new Map<string, SqliteCollection<ReadDoc>>();
  private readonly indexSpecs = new Map<string, IndexSpec[]>();
  /**
   * The flow a call comes from: inside a transaction (`tx`), and/or inside the bulk load's own
   * function (`bulk`: only its transactions are handed to the writer thread; another flow's
   * transaction during the load waits for the thread and runs on this connection).
   */
  private readonly inTransaction = new AsyncLocalStorage<{ tx: boolean; bulk: boolean }>();
  private inTx(): boolean {
    return this.inTransaction.getStore()?.tx === true;
  }
  private queue: Promise<unknown> = Promise.resolve();
  /** Top-level transactions running or waiting their turn. */
  private transactions = 0;
  private readonly checkpointStatements: {
    get: Database.Statement<[string], { position: number }>;
    set: Database.Statement<[string, number]>;
  };
  /** A bulk load is under way. */
  private bulk = false;
  /** Collections whose non-unique indexes the bulk load dropped and has not built again. */
  private readonly deferred = new Set<string>();
  /** Collections holding buffered writes of the open transaction. */
  private readonly dirty = new Set<SqliteCollection<ReadDoc>>();
  /** Characters buffered since the last write-out (an upper bound: a row written twice counts twice). */
  private bufferedChars = 0;
  /** The bulk load's writer thread (SqliteReadStoreOptions.bulkWriter), while the load runs. */
  private writer: ReadStoreWriter | null = null;
  /**
   * The open top-level transaction of the bulk load hands its rows to the writer thread at its
   * end: nothing of it is begun on this connection (until something needs it to: `goDirect`).
   */
  private handingOff = false;
  /** `goDirect` under way (several calls of one transaction share it). */
  private goingDirect: Promise<void> | null = null;
  /** Checkpoints set by the open transaction while it hands off. */
  private readonly pendingCheckpoints = new Map<string, number>();
  /** Checkpoints of spans handed to the writer thread and not yet committed. */
  private readonly handedOffCheckpoints = new Map<string, { position: number; span: number }>();
  /** The collections each span in flight wrote: to forget its rows once it has committed. */
  private readonly spansInFlight = new Map<number, SqliteCollection<ReadDoc>[]>();
  private readonly host: BulkHost = {
    buffering: () => this.bulk && this.inTx(),
    buffered: (c, chars) => {
      this.dirty.add(c);
      this.bufferedChars += chars;
      if (this.bufferedChars <= this.bulkBufferChars) return undefined;
      // Over the cap: the rows are written out on this connection, inside the transaction.
      if (this.handingOff) return this.goDirect().then(() => this.flushBuffered());
      this.flushBuffered();
      return undefined;
    },
    beforeQuery: (name) => {
      const wait = this.beforeDirectWrite(true);
      if (wait) return wait.then(() => this.buildDeferred(name));
      this.buildDeferred(name);
      return undefined;
    },
    beforeDirectWrite: () => this.beforeDirectWrite(),
    flushable: () => this.db.inTransaction,
  };

  private readonly bulkBufferChars: number;
  private readonly bulkWriter: boolean;

  constructor(
    private readonly file: string,
    options: SqliteReadStoreOptions = {},
  ) {
    this.bulkBufferChars = options.bulkBufferChars ?? BULK_BUFFER_CHARS;
    this.bulkWriter = (options.bulkWriter ?? 'thread') === 'thread' && file !== ':memory:' && file !== '';
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
    if (options.checkpointer && file !== ':memory:' && file !== '') void options.checkpointer.manage(file, this.db);
  }

  collection<T extends ReadDoc>(name: string, indexes: IndexSpec[] = []): Collection<T> {
    if (!FIELD.test(name)) throw new Error(`invalid collection name ${name}`);
    let c = this.collections.get(name);
    if (!c) {
      const columns = this.prepareTable(name, indexes);
      // Also what restores indexes a bulk load dropped, if its process died before it built them again.
      for (const idx of indexes) this.db.exec(createIndexSql(name, idx));
      c = new SqliteCollection<ReadDoc>(this.db, name, this.host, indexes.some((i) => i.unique === true), columns);
      this.collections.set(name, c);
      this.indexSpecs.set(name, indexes);
    }
    return c as unknown as Collection<T>;
  }

  /**
   * Creates the collection's table, or brings an existing one to this layout: each indexed
   * field in a column of its own, filled from the documents when it is added (a store of the
   * earlier layout, with expression indexes on `json_extract`, is migrated in place: columns
   * added and filled, its expression indexes dropped for indexes on the columns). Returns the
   * table's field columns: those of `indexes` and any another caller added before, all of
   * which every write fills.
   */
  private prepareTable(name: string, indexes: IndexSpec[]): string[] {
    const wanted = [...new Set(indexes.flatMap((i) => i.fields))];
    for (const f of wanted) if (!FIELD.test(f)) throw new Error(`invalid field name ${f}`);
    const table = `rm_${name}`;
    this.db.exec(`CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY, doc TEXT NOT NULL${wanted.map((f) => `, ${columnOf(f)}`).join('')})`);
    const existing = (this.db.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as { name: string }[])
      .map((r) => r.name)
      .filter((n) => n.startsWith('c_'))
      .map((n) => n.slice(2));
    const missing = wanted.filter((f) => !existing.includes(f));
    const expressionIndexes = (this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql LIKE '%json_extract%'").all(table) as { name: string }[]).map((r) => r.name);
    if (missing.length > 0 || expressionIndexes.length > 0) {
      this.db.transaction(() => {
        for (const ix of expressionIndexes) this.db.exec(`DROP INDEX IF EXISTS ${ix}`);
        for (const f of missing) this.db.exec(`ALTER TABLE ${table} ADD COLUMN ${columnOf(f)}`);
        if (missing.length > 0) this.db.exec(`UPDATE ${table} SET ${missing.map((f) => `${columnOf(f)} = ${field(f)}`).join(', ')}`);
      })();
    }
    return [...existing, ...missing];
  }

  async getCheckpoint(projection: string): Promise<number> {
    const pending = this.pendingCheckpoints.get(projection) ?? this.handedOffCheckpoints.get(projection)?.position;
    if (pending !== undefined) return pending;
    const row = this.checkpointStatements.get.get(projection);
    return row?.position ?? 0;
  }

  async setCheckpoint(projection: string, position: number): Promise<void> {
    if (this.handingOff && this.inTx()) {
      this.pendingCheckpoints.set(projection, position);
      return;
    }
    for (let wait = this.beforeDirectWrite(); wait; wait = this.beforeDirectWrite()) await wait;
    this.checkpointStatements.set.run(projection, position);
  }

  /**
   * Before this connection writes or queries by filter during a bulk load with a writer
   * thread: inside a transaction that hands off, the transaction is begun here instead
   * (`goDirect`); outside one, the spans in flight commit first (SQLite has them all, and the
   * thread holds no lock). Nothing to wait for otherwise (undefined).
   */
  private beforeDirectWrite(query = false): Promise<void> | undefined {
    // A write outside any transaction while another flow holds one open on this connection
    // (across its awaits: the erasure service's, a projection's) would run inside it, and be
    // rolled back with it, or lost with it by a crash before its commit, although its writer
    // went on as if it were stored (the search index then moves its own checkpoint, in
    // search.db, past it). It waits until no transaction is open or queued, and writes alone.
    if (!query && !this.inTx() && this.db.inTransaction && !this.bulk) return this.queue.then(() => undefined);
    if (!this.writer) return undefined;
    if (this.inTx()) return this.handingOff ? this.goDirect() : undefined;
    return this.writer.inFlight > 0 || this.writer.failed ? this.writer.drain() : undefined;
  }

  /**
   * The open transaction stops handing off: once every span in flight has committed, it
   * begins on this connection with what it set so far (its buffered rows are written out
   * before its commit, or before a query, as without a writer thread). For what needs the
   * connection inside a transaction: a query by filter, a write to a collection with a unique
   * index (refused when made), more rows than the buffer's cap.
   */
  private goDirect(): Promise<void> {
    this.goingDirect ??= (async () => {
      await this.writer!.drain();
      if (!this.handingOff) return;
      this.db.exec('BEGIN IMMEDIATE');
      this.handingOff = false;
      for (const [p, position] of this.pendingCheckpoints) this.checkpointStatements.set.run(p, position);
      this.pendingCheckpoints.clear();
    })().finally(() => {
      this.goingDirect = null;
    });
    return this.goingDirect;
  }

  /**
   * The end of a transaction that handed off: its rows and checkpoints go to the writer thread
   * as one span, and it returns once the span before it has committed (one span in flight while
   * the next is projected; reads by id see the rows until SQLite has them).
   */
  private async handOff(): Promise<void> {
    const writer = this.writer!;
    if (writer.failed) throw writer.failed;
    const span = writer.sentCount + 1;
    const tables: SpanTable[] = [];
    const written: SqliteCollection<ReadDoc>[] = [];
    for (const c of this.dirty) {
      const t = c.handOff(span);
      if (t) {
        tables.push(t);
        written.push(c);
      }
    }
    this.dirty.clear();
    this.bufferedChars = 0;
    const checkpoints = [...this.pendingCheckpoints];
    for (const [p, position] of checkpoints) this.handedOffCheckpoints.set(p, { position, span });
    this.pendingCheckpoints.clear();
    this.spansInFlight.set(span, written);
    writer.send({ tables, checkpoints });
    if (span > 1) await writer.waitFor(span - 1);
  }

  /** Span `span` has committed (called by the writer thread's answer). */
  private spanCommitted(span: number): void {
    for (const c of this.spansInFlight.get(span) ?? []) c.committed(span);
    this.spansInFlight.delete(span);
    for (const [p, v] of this.handedOffCheckpoints) if (v.span <= span) this.handedOffCheckpoints.delete(p);
  }

  /** The writer thread failed: what it did not commit is gone (the load ends with its error). */
  private writerFailed(): void {
    for (const c of this.collections.values()) c.forgetHandedOff();
    this.spansInFlight.clear();
    this.handedOffCheckpoints.clear();
  }

  async transaction<R>(fn: () => Promise<R>): Promise<R> {
    // Nested calls join the outer transaction; others wait their turn (one connection).
    if (this.inTx()) return fn();
    const bulkFlow = this.inTransaction.getStore()?.bulk === true;
    const run = async (): Promise<R> => {
      // In a bulk load with a writer thread, the load's transactions hand their rows to the
      // thread at their end; another flow's waits until the thread holds no lock.
      // A thread that failed before it was given anything (it could not start, say): the
      // load goes on without it, its spans committed here.
      if (this.bulk && this.writer?.failed && this.writer.sentCount === 0) {
        const failed = this.writer;
        this.writer = null;
        await failed.close();
      }
      if (this.bulk && this.writer && bulkFlow) {
        if (this.writer.failed) throw this.writer.failed;
        this.handingOff = true;
      } else {
        if (this.bulk && this.writer) await this.writer.drain().catch(() => undefined);
        this.db.exec('BEGIN IMMEDIATE');
      }
      try {
        const result = await this.inTransaction.run({ tx: true, bulk: bulkFlow }, fn);
        if (this.goingDirect) await this.goingDirect;
        if (this.handingOff) {
          this.handingOff = false;
          await this.handOff();
        } else {
          this.flushBuffered();
          this.db.exec('COMMIT');
        }
        return result;
      } catch (err) {
        this.handingOff = false;
        for (const c of this.dirty) c.discard();
        this.dirty.clear();
        this.bufferedChars = 0;
        this.pendingCheckpoints.clear();
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
      // (A bulk load keeps it on: its flow is told apart by it.)
      if (--this.transactions === 0 && !this.bulk) this.inTransaction.disable();
    }
  }

  async clear(collections: string[]): Promise<void> {
    const wait = this.beforeDirectWrite();
    if (wait) await wait;
    for (const name of collections) {
      if (!FIELD.test(name)) throw new Error(`invalid collection name ${name}`);
      this.collections.get(name)?.discard();
      this.db.exec(`CREATE TABLE IF NOT EXISTS rm_${name} (id TEXT PRIMARY KEY, doc TEXT NOT NULL)`);
      this.db.exec(`DELETE FROM rm_${name}`);
    }
  }

  async bulkLoad<R>(fn: () => Promise<R>): Promise<R> {
    if (this.bulk) return fn();
    this.bulk = true;
    // Indexes are dropped outside any transaction only (DDL inside one would commit with it).
    if (!this.db.inTransaction) {
      for (const [name, specs] of this.indexSpecs) {
        const deferrable = specs.filter((i) => i.unique !== true);
        if (deferrable.length === 0 || this.db.prepare(`SELECT 1 FROM rm_${name} LIMIT 1`).get() !== undefined) continue;
        for (const idx of deferrable) this.db.exec(`DROP INDEX IF EXISTS ${indexName(name, idx)}`);
        this.deferred.add(name);
      }
      if (this.bulkWriter) {
        this.writer = new ReadStoreWriter(
          this.file,
          ROWS_PER_INSERT,
          (span) => this.spanCommitted(span),
          () => this.writerFailed(),
        );
      }
    }
    let result: R;
    try {
      // (A load begun inside a transaction keeps joining it.)
      result = await this.inTransaction.run({ tx: this.inTx(), bulk: true }, fn);
      await this.endWriter();
    } catch (err) {
      await this.endWriter().catch(() => undefined);
      this.bulk = false;
      if (this.transactions === 0) this.inTransaction.disable();
      try {
        for (const name of [...this.deferred]) this.buildIndexes(name);
      } catch {
        // The load's own error is the one to report; the next open builds what is missing.
      }
      throw err;
    }
    this.bulk = false;
    if (this.transactions === 0) this.inTransaction.disable();
    for (const name of [...this.deferred]) this.buildIndexes(name);
    return result;
  }

  /** The bulk load's writer thread commits what it was given, then ends (rejects if a span failed). */
  private async endWriter(): Promise<void> {
    const writer = this.writer;
    if (!writer) return;
    try {
      await writer.drain();
    } finally {
      this.writer = null;
      await writer.close();
      this.writerFailed();
    }
  }

  private buildDeferred(name: string): void {
    if (this.deferred.has(name)) this.buildIndexes(name);
  }

  /** Writes out every collection's buffered rows (inside the open transaction). */
  private flushBuffered(): void {
    for (const c of this.dirty) c.flush();
    this.dirty.clear();
    this.bufferedChars = 0;
  }

  /** Builds the indexes a bulk load deferred for one collection (the table is sorted once per index). */
  private buildIndexes(name: string): void {
    for (const idx of this.indexSpecs.get(name) ?? []) this.db.exec(createIndexSql(name, idx));
    this.deferred.delete(name);
  }

  /** Raw handle for embedded-only tools. */
  get database(): Database.Database {
    return this.db;
  }

  async close(): Promise<void> {
    // A load still running (its caller did not wait for it): what was handed to the writer
    // thread is committed first, and the thread ends with the store.
    await this.endWriter().catch(() => undefined);
    this.db.close();
  }
}
