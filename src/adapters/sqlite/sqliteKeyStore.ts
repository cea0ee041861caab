import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { KeyStore } from '../../ports/keyStore';

/** A request to the key store's thread, and its answer. */
type KeyRequest = { id: number; op: 'get' | 'create' | 'destroy'; documentId: string; key?: Uint8Array; now?: string } | { id: number; op: 'close' };
type KeyAnswer = { id: number; found?: boolean; key?: Uint8Array | null; error?: string };

/**
 * The thread's code (evaluated, so it needs no build step): it owns the connection and runs
 * the statements one request at a time. A write here waits for its syncs (synchronous=FULL,
 * a rollback journal: two or three fsyncs, 20-30 ms each on a busy disk), which on the main
 * thread held every request behind it that long.
 */
const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma('secure_delete = ON');
db.pragma('journal_mode = DELETE');
db.pragma('synchronous = FULL');
db.pragma('busy_timeout = 5000');
const get = db.prepare('SELECT key FROM data_keys WHERE document_id = ?');
const insert = db.prepare('INSERT OR IGNORE INTO data_keys (document_id, key, created_at) VALUES (?, ?, ?)');
const destroy = db.prepare(\`INSERT INTO data_keys (document_id, key, created_at, destroyed_at) VALUES (@id, NULL, @now, @now)
  ON CONFLICT(document_id) DO UPDATE SET key = NULL, destroyed_at = COALESCE(destroyed_at, excluded.destroyed_at)\`);
parentPort.on('message', (m) => {
  try {
    if (m.op === 'close') { db.close(); parentPort.postMessage({ id: m.id }); return; }
    if (m.op === 'create') insert.run(m.documentId, Buffer.from(m.key), m.now);
    if (m.op === 'destroy') { destroy.run({ id: m.documentId, now: m.now }); parentPort.postMessage({ id: m.id }); return; }
    const row = get.get(m.documentId);
    parentPort.postMessage({ id: m.id, found: !!row, key: row ? row.key : null });
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: err && err.message ? err.message : String(err) });
  }
});
`;

/**
 * Key store on a SQLite file. `secure_delete` zeroes a destroyed key's bytes in the file,
 * and the rollback journal (not WAL) never keeps an old page once a commit is done.
 * Keys are cached in memory; a destroyed key is dropped from the cache at once.
 *
 * The file is read and written on a thread of its own (one request at a time, in order), so
 * the syncs of a new document's key never hold the event loop; a key is answered once it is
 * on disk, as before. The table is made on the calling thread at construction, so a data dir
 * that cannot hold it fails at start; the thread starts then too.
 */
export class SqliteKeyStore implements KeyStore {
  private readonly cache = new Map<string, Buffer | null>();
  /** Look-ups and creations in flight, by document: concurrent callers share one. */
  private readonly inFlight = new Map<string, Promise<{ found: boolean; key: Buffer | null }>>();
  private readonly waiting = new Map<number, { resolve: (a: KeyAnswer) => void; reject: (err: Error) => void }>();
  private worker: Worker | undefined;
  private nextId = 1;
  private closed = false;

  constructor(private readonly file: string) {
    const db = new Database(file);
    try {
      db.pragma('journal_mode = DELETE');
      db.exec(`CREATE TABLE IF NOT EXISTS data_keys (
        document_id TEXT PRIMARY KEY,
        key BLOB,
        created_at TEXT NOT NULL,
        destroyed_at TEXT
      )`);
    } finally {
      db.close();
    }
    // Started now (unref'd): the first new document's key does not wait for the thread to boot.
    this.thread();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(THREAD_CODE, { eval: true, workerData: { file: this.file, driver: require.resolve('better-sqlite3') } });
    worker.unref(); // kept alive only while a request waits (see request)
    worker.on('message', (a: KeyAnswer) => {
      const w = this.waiting.get(a.id);
      if (!w) return;
      this.waiting.delete(a.id);
      if (this.waiting.size === 0) worker.unref();
      w.resolve(a);
    });
    const fail = (err: Error): void => {
      if (this.worker === worker) this.worker = undefined; // the next request starts a new thread
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`key store thread exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  private async request(req: Omit<Extract<KeyRequest, { op: 'get' | 'create' | 'destroy' }>, 'id'>): Promise<KeyAnswer> {
    if (this.closed) throw new Error('key store is closed');
    const id = this.nextId++;
    const answer = await new Promise<KeyAnswer>((resolve, reject) => {
      const worker = this.thread();
      this.waiting.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ ...req, id } satisfies KeyRequest);
    });
    if (answer.error !== undefined) throw new Error(`key store: ${answer.error}`);
    return answer;
  }

  private lookup(documentId: string, create: boolean): Promise<{ found: boolean; key: Buffer | null }> {
    if (this.cache.has(documentId)) return Promise.resolve({ found: true, key: this.cache.get(documentId) ?? null });
    const pending = this.inFlight.get(documentId);
    // A creation may not ride on a plain look-up (which may find nothing).
    if (pending && !create) return pending;
    const p = (async () => {
      const a = create
        ? await this.request({ op: 'create', documentId, key: randomBytes(32), now: new Date().toISOString() })
        : await this.request({ op: 'get', documentId });
      if (!a.found) return { found: false, key: null };
      const key = a.key ? Buffer.from(a.key) : null;
      // A destroy answered meanwhile wins (it set the tombstone in the cache).
      if (!this.cache.has(documentId)) this.cache.set(documentId, key);
      const cached = this.cache.get(documentId) ?? null;
      return { found: true, key: cached };
    })();
    this.inFlight.set(documentId, p);
    void p.then(
      () => this.inFlight.get(documentId) === p && this.inFlight.delete(documentId),
      () => this.inFlight.get(documentId) === p && this.inFlight.delete(documentId),
    );
    return p;
  }

  async get(documentId: string): Promise<Buffer | null> {
    return (await this.lookup(documentId, false)).key;
  }

  async getOrCreate(documentId: string): Promise<Buffer | null> {
    return (await this.lookup(documentId, true)).key;
  }

  async destroy(documentId: string): Promise<void> {
    await this.request({ op: 'destroy', documentId, now: new Date().toISOString() });
    this.cache.set(documentId, null);
  }

  async isDestroyed(documentId: string): Promise<boolean> {
    const l = await this.lookup(documentId, false);
    return l.found && l.key === null;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.cache.clear();
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return;
    const id = this.nextId++;
    await new Promise<void>((resolve) => {
      this.waiting.set(id, { resolve: () => resolve(), reject: () => resolve() });
      worker.ref();
      worker.postMessage({ id, op: 'close' } satisfies KeyRequest);
    });
    await worker.terminate();
  }
}
