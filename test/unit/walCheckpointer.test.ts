import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WalCheckpointer } from '../../src/adapters/sqlite/walCheckpointer';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';

const until = async (cond: () => boolean, what: string): Promise<void> => {
  for (let i = 0; i < 500; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
};


describe('WAL checkpoints on their own thread', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-wal-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  // Every checkpointer a test made is closed, whatever the test's outcome.
  const made: WalCheckpointer[] = [];
  const checkpointerOf = (intervalMs: number, onError?: (e: Error) => void) => {
    const c = new WalCheckpointer(onError, intervalMs);
    made.push(c);
    return c;
  };
  afterEach(async () => {
    await Promise.all(made.splice(0).map((c) => c.close()));
  });

  it('switches the store connection’s own checkpoints off and copies its commits into the database file', async () => {
    const checkpointer = checkpointerOf(20);
    const file = path.join(dir, 'a.db');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
    await checkpointer.manage(file, db);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    expect(checkpointer.files).toEqual([file]);
    // Far more pages than SQLite's own threshold (1,000), in one transaction at a time; with its
    // checkpoints off, the connection itself copies nothing.
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    for (let i = 0; i < 40; i++) db.transaction(() => { for (let k = 0; k < 50; k++) insert.run('x'.repeat(2000)); })();
    // ~4 MB committed: only a checkpoint copies pages into the database file (it stays at its
    // first pages while they are in the WAL alone).
    expect(fs.statSync(`${file}-wal`).size).toBeGreaterThan(3_000_000);
    await until(() => fs.statSync(file).size > 3_000_000, 'the thread to checkpoint the WAL into the database file');
    await checkpointer.close();
    // Given back: the store checkpoints itself again.
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    db.close();
    // The last connection closed: the WAL is gone, the rows are in the file.
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    const check = new Database(file, { readonly: true });
    expect((check.prepare('SELECT COUNT(*) AS n FROM t').get() as { n: number }).n).toBe(2000);
    check.close();
  });

  it('gives the file back to its store when the thread ends, so the WAL never grows unchecked', async () => {
    const checkpointer = checkpointerOf(20);
    const file = path.join(dir, 'b.db');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
    await checkpointer.manage(file, db);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    // The thread dies (as if it crashed).
    await (checkpointer as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await until(() => db.pragma('wal_autocheckpoint', { simple: true }) === 1000, 'the file to be given back');
    expect(checkpointer.files).toEqual([]);
    // A file handed over after the end stays with its store.
    const other = new Database(path.join(dir, 'c.db'));
    other.pragma('journal_mode = WAL');
    await checkpointer.manage(path.join(dir, 'c.db'), other);
    expect(other.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    other.close();
    db.close();
    await checkpointer.close();
  });

  it('a store that cannot be opened by the thread keeps its own checkpoints and the error is reported', async () => {
    const errors: Error[] = [];
    const checkpointer = checkpointerOf(20, (e) => errors.push(e));
    const db = new Database(':memory:');
    await checkpointer.manage(path.join(dir, 'missing.db'), db);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    expect(errors.map((e) => e.message).join()).toMatch(/missing\.db/);
    db.close();
    await checkpointer.close();
  });

  it('the event store and the read store hand their files over, and work as before', async () => {
    const checkpointer = checkpointerOf(20);
    const events = new SqliteEventStore(path.join(dir, 'events.db'), { checkpointer });
    const read = new SqliteReadStore(path.join(dir, 'read.db'), { checkpointer });
    await until(() => checkpointer.files.length === 2, 'both files to be handed over');
    const r = await events.append('s-1', [{ id: randomUUID(), type: 'Something', data: { n: 1 }, metadata: { occurredAt: new Date().toISOString() } } as never], 'no_stream');
    expect(r.position).toBe(1);
    await read.collection<{ id: string; n: number }>('things').put({ id: 'a', n: 1 });
    await events.close();
    await read.close();
    await checkpointer.close();
    for (const f of ['events.db', 'read.db']) expect(fs.existsSync(path.join(dir, `${f}-wal`))).toBe(false);
    const reopened = new SqliteEventStore(path.join(dir, 'events.db'));
    expect((await reopened.readAll(0, 10)).length).toBe(1);
    await reopened.close();
  });
});
