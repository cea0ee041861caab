import { Worker } from 'node:worker_threads';

export type SqlValue = string | number | null;

/** The rows one span writes to one table, each id once (its latest write). */
export interface SpanTable {
  table: string;
  /** The field columns written beside id and doc (the table's `c_<field>` columns). */
  columns: string[];
  ids: string[];
  /** Each id's document JSON, or null to delete the row. */
  docs: (string | null)[];
  /** `columns.length` values per id, in the order of `ids` (nulls for a delete). */
  values: SqlValue[];
}

/** One span: its rows and its projections' checkpoints, committed together in one transaction. */
export interface SpanWrite {
  span: number;
  tables: SpanTable[];
  checkpoints: [string, number][];
}

/** The writer thread's young generation (V8's default for a thread is a few MB). */
const WRITER_YOUNG_GENERATION_MB = 64;

type WriterAnswer = { span: number; error?: string } | { closed: true };

/**
 * The thread's code (evaluated, so it needs no build step): its own connection to the read
 * store's file, the same pragmas, one transaction per span, in the order they come. After a
 * failure it refuses every later span (they were projected over rows that are not stored).
 */
const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('busy_timeout = 5000');
db.pragma('secure_delete = ON');
const ROWS = workerData.rowsPerInsert;
const statements = new Map();
const prepare = (sql) => {
  let s = statements.get(sql);
  if (!s) { s = db.prepare(sql); statements.set(sql, s); }
  return s;
};
const upsert = (table, columns, rows) => {
  const names = ['id', 'doc', ...columns];
  const row = '(' + names.map(() => '?').join(', ') + ')';
  const set = names.slice(1).map((n) => n + ' = excluded.' + n).join(', ');
  return prepare('INSERT INTO ' + table + ' (' + names.join(', ') + ') VALUES ' + Array(rows).fill(row).join(', ') + ' ON CONFLICT(id) DO UPDATE SET ' + set);
};
const setCheckpoint = db.prepare('INSERT INTO checkpoints (projection, position) VALUES (?, ?) ON CONFLICT(projection) DO UPDATE SET position = excluded.position');
let failed = null;
function write(t) {
  const n = t.columns.length;
  const width = 2 + n;
  // In id order: neighbouring keys share B-tree pages.
  const order = t.ids.map((_, i) => i).sort((a, b) => (t.ids[a] < t.ids[b] ? -1 : t.ids[a] > t.ids[b] ? 1 : 0));
  const params = [];
  const deletes = [];
  for (const i of order) {
    if (t.docs[i] === null) { deletes.push(t.ids[i]); continue; }
    params.push(t.ids[i], t.docs[i]);
    for (let k = 0; k < n; k++) params.push(t.values[i * n + k]);
  }
  const whole = ROWS * width;
  let i = 0;
  if (params.length >= whole) {
    const many = upsert(t.table, t.columns, ROWS);
    for (; i + whole <= params.length; i += whole) many.run(params.slice(i, i + whole));
  }
  if (i < params.length) {
    const one = upsert(t.table, t.columns, 1);
    for (; i < params.length; i += width) one.run(params.slice(i, i + width));
  }
  if (deletes.length) {
    const del = prepare('DELETE FROM ' + t.table + ' WHERE id = ?');
    for (const id of deletes) del.run(id);
  }
}
parentPort.on('message', (m) => {
  if (m.op === 'close') { db.close(); parentPort.postMessage({ closed: true }); return; }
  if (failed !== null) { parentPort.postMessage({ span: m.span, error: failed }); return; }
  try {
    db.exec('BEGIN IMMEDIATE');
    for (const t of m.tables) write(t);
    for (const [p, pos] of m.checkpoints) setCheckpoint.run(p, pos);
    db.exec('COMMIT');
    parentPort.postMessage({ span: m.span });
  } catch (err) {
    failed = err && err.message ? err.message : String(err);
    try { if (db.inTransaction) db.exec('ROLLBACK'); } catch {}
    parentPort.postMessage({ span: m.span, error: failed });
  }
});
`;

/**
 * A thread with its own connection that commits a bulk load's spans while the main thread
 * projects the next one. Spans commit in the order they are sent, each in one transaction with
 * its checkpoints, so a process killed at any point leaves whole spans only (and the
 * projections' checkpoints at the last one committed). After a failure every later span is
 * refused, and `waitFor`/`drain` reject with the failure.
 */
export class ReadStoreWriter {
  private readonly worker: Worker;
  private sent = 0;
  private committed = 0;
  private failure: Error | null = null;
  private waiters: { span: number; resolve: () => void; reject: (err: Error) => void }[] = [];
  private closing: Promise<void> | null = null;
  private closedResolve: (() => void) | null = null;
  private exited = false;

  constructor(
    file: string,
    rowsPerInsert: number,
    /** Called on the main thread once a span has committed (before anyone waiting for it resumes). */
    private readonly onCommitted: (span: number) => void,
    /** Called once, at the first failure: no later span will commit. */
    private readonly onFailed: (err: Error) => void,
  ) {
    this.worker = new Worker(THREAD_CODE, {
      eval: true,
      workerData: { file, driver: require.resolve('better-sqlite3'), rowsPerInsert },
      // A span's rows (tens of MB of JSON) live until written: in a larger young generation
      // they are collected there instead of being copied between semispaces and promoted
      // (measured: 0.15-0.25 s less CPU of the GC helper threads per 100,000 events).
      resourceLimits: { maxYoungGenerationSizeMb: WRITER_YOUNG_GENERATION_MB },
    });
    this.worker.on('message', (a: WriterAnswer) => {
      if ('closed' in a) {
        this.closedResolve?.();
        return;
      }
      if (a.error !== undefined) this.fail(new Error(`read store writer: ${a.error}`));
      else {
        this.committed = a.span;
        this.onCommitted(a.span);
      }
      this.settle();
    });
    this.worker.on('error', (err) => this.fail(err));
    this.worker.on('exit', (code) => {
      this.exited = true;
      this.closedResolve?.();
      if (!this.closing) this.fail(new Error(`read store writer thread exited (code ${code})`));
    });
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    this.onFailed(err);
    this.settle();
  }

  private settle(): void {
    const ready = this.waiters.filter((w) => this.failure !== null || w.span <= this.committed);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => !ready.includes(w));
    for (const w of ready) {
      if (w.span <= this.committed) w.resolve();
      else w.reject(this.failure!);
    }
  }

  /** The first failure, if any (the spans from it on were not stored). */
  get failed(): Error | null {
    return this.failure;
  }

  /** Spans sent so far (the last one's number). */
  get sentCount(): number {
    return this.sent;
  }

  /** Spans sent and not yet committed. */
  get inFlight(): number {
    return this.sent - this.committed;
  }

  /** Sends the next span; returns its number. */
  send(write: Omit<SpanWrite, 'span'>): number {
    if (this.failure) throw this.failure;
    const span = ++this.sent;
    this.worker.postMessage({ ...write, span } satisfies SpanWrite);
    return span;
  }

  /** Resolves once span `span` (and every one before it) has committed; rejects on a failure. */
  waitFor(span: number): Promise<void> {
    // Spans committed before a failure did commit.
    if (span <= this.committed) return Promise.resolve();
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.waiters.push({ span, resolve, reject }));
  }

  /** Every span sent has committed. */
  drain(): Promise<void> {
    return this.waitFor(this.sent);
  }

  /** Ends the thread (after the spans sent, committed or refused). */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      // A thread that died (or failed to start) has nothing left to close.
      if (this.exited) return resolve();
      this.closedResolve = resolve;
      this.worker.postMessage({ op: 'close' });
    }).then(() => this.worker.terminate().then(() => undefined));
    return this.closing;
  }
}
