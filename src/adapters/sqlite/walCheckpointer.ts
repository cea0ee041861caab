import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';

/** How often the thread checkpoints each file's WAL (PASSIVE: never blocks a reader or the writer). */
const CHECKPOINT_INTERVAL_MS = 200;
/** SQLite's own default: what a connection goes back to should the thread be lost. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;

type ThreadMessage = { op: 'add'; file: string } | { op: 'close' };
type ThreadAnswer = { added: string; error?: string } | { closed: true } | { failed: string; file: string };

/**
 * The thread's code (evaluated, so it needs no build step): a connection of its own per file,
 * and every CHECKPOINT_INTERVAL_MS a passive checkpoint of each: it copies the WAL's committed
 * pages into the database file (syncing both, as SQLite's own checkpoints do) as far as no
 * reader still needs them, and takes no lock a reader or the writer waits for. With nothing new
 * in the WAL it returns at once. At close each connection is closed; the last one to close a
 * file checkpoints it whole and removes its WAL, as SQLite does.
 */
const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const dbs = new Map();
const tick = () => {
  for (const [file, db] of dbs) {
    try { db.pragma('wal_checkpoint(PASSIVE)'); }
    catch (err) {
      // Busy or locked: the next tick tries again. Anything else: this file is given back.
      const code = err && err.code;
      if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') continue;
      dbs.delete(file);
      try { db.close(); } catch {}
      parentPort.postMessage({ failed: err && err.message ? err.message : String(err), file });
    }
  }
};
const timer = setInterval(tick, workerData.intervalMs);
parentPort.on('message', (m) => {
  if (m.op === 'add') {
    try {
      if (!dbs.has(m.file)) dbs.set(m.file, new Database(m.file, { fileMustExist: true }));
      parentPort.postMessage({ added: m.file });
    } catch (err) {
      parentPort.postMessage({ added: m.file, error: err && err.message ? err.message : String(err) });
    }
    return;
  }
  if (m.op === 'close') {
    clearInterval(timer);
    for (const db of dbs.values()) { try { db.close(); } catch {} }
    dbs.clear();
    parentPort.postMessage({ closed: true });
  }
});
`;

/**
 * Checkpoints the WAL of the embedded SQLite files on a thread of its own, so that the
 * connections that write them (the event store's and the read store's, on the event loop)
 * never do. A commit of theirs only appends to the WAL; SQLite's automatic checkpoint would
 * otherwise copy ~1,000 pages into the database file and sync it, inside whichever commit
 * crossed the threshold, on the event loop (measured: ~10% of the main thread's CPU per
 * durable command, `node dist/bench/run.js core --parts http`).
 *
 * A store hands its connection over with `manage(file, db)`: its automatic checkpoints are
 * switched off once this thread has the file open, and switched back on should the thread
 * fail or end, so a WAL never grows without bound. Crash safety is SQLite's: a checkpoint is
 * the same operation whichever connection runs it.
 */
export class WalCheckpointer {
  private readonly worker: Worker;
  private readonly managed = new Map<string, Database.Database>();
  private readonly waiting = new Map<string, ((error?: string) => void)[]>();
  private closing: Promise<void> | null = null;
  private closedResolve: (() => void) | null = null;
  private exited = false;

  constructor(
    private readonly onError: (err: Error) => void = () => undefined,
    intervalMs = CHECKPOINT_INTERVAL_MS,
  ) {
    this.worker = new Worker(THREAD_CODE, { eval: true, workerData: { driver: require.resolve('better-sqlite3'), intervalMs } });
    // It must not keep a process alive on its own.
    this.worker.unref();
    this.worker.on('message', (a: ThreadAnswer) => {
      if ('closed' in a) {
        this.closedResolve?.();
        return;
      }
      if ('failed' in a) {
        this.giveBack(a.file);
        this.onError(new Error(`WAL checkpoints of ${a.file} failed on their thread (${a.failed}); the store checkpoints them itself again`));
        return;
      }
      const callbacks = this.waiting.get(a.added) ?? [];
      this.waiting.delete(a.added);
      for (const cb of callbacks) cb(a.error);
    });
    this.worker.on('error', (err) => {
      this.giveBackAll();
      this.onError(err);
    });
    this.worker.on('exit', () => {
      this.exited = true;
      this.closedResolve?.();
      this.giveBackAll();
      for (const [file, callbacks] of this.waiting) for (const cb of callbacks) cb(`the checkpoint thread ended before it opened ${file}`);
      this.waiting.clear();
    });
  }

  /**
   * The thread checkpoints `file` from now on (its schema must exist): `db`, the store's own
   * connection, stops checkpointing once the thread has opened the file. Resolves then; a
   * failure leaves `db` as it was (checkpointing itself).
   */
  manage(file: string, db: Database.Database): Promise<void> {
    if (this.exited || this.closing) return Promise.resolve();
    return new Promise((resolve) => {
      const callbacks = this.waiting.get(file) ?? [];
      callbacks.push((error) => {
        if (error === undefined && !this.exited && !this.closing && db.open) {
          db.pragma('wal_autocheckpoint = 0');
          this.managed.set(file, db);
        } else if (error !== undefined) {
          this.onError(new Error(`WAL checkpoints of ${file} stay with its store: ${error}`));
        }
        resolve();
      });
      this.waiting.set(file, callbacks);
      this.worker.postMessage({ op: 'add', file } satisfies ThreadMessage);
    });
  }

  /** Files whose checkpoints the thread runs now. */
  get files(): string[] {
    return [...this.managed.keys()];
  }

  private giveBack(file: string): void {
    const db = this.managed.get(file);
    this.managed.delete(file);
    if (db?.open) db.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
  }

  private giveBackAll(): void {
    for (const file of [...this.managed.keys()]) this.giveBack(file);
  }

  /**
   * Ends the thread. Close the stores first: the thread's connection is then the last one of
   * each file, and closing it checkpoints the whole WAL and removes it. A store still open
   * checkpoints itself again.
   */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.giveBackAll();
      if (this.exited) return resolve();
      this.closedResolve = resolve;
      this.worker.postMessage({ op: 'close' } satisfies ThreadMessage);
    }).then(() => this.worker.terminate().then(() => undefined));
    return this.closing;
  }
}
