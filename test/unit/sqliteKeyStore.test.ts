import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { SqliteKeyStore } from '../../src/adapters/sqlite/sqliteKeyStore';

// The store reads and writes its file on a thread of its own: the same answers as before, in order.
describe('SqliteKeyStore', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-keys-'));
    file = path.join(dir, 'keys.db');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('creates a key once, keeps it on disk, and remembers a destroyed key as a tombstone', async () => {
    const keys = new SqliteKeyStore(file);
    expect(await keys.get('d1')).toBeNull();
    expect(await keys.isDestroyed('d1')).toBe(false);
    // Concurrent first uses of a document share one key.
    const [a, b, c] = await Promise.all([keys.getOrCreate('d1'), keys.getOrCreate('d1'), keys.get('d1')]);
    expect(a).toHaveLength(32);
    expect(b?.equals(a as Buffer)).toBe(true);
    expect(c === null || c.equals(a as Buffer)).toBe(true);
    expect((await keys.get('d1'))?.equals(a as Buffer)).toBe(true);
    const other = await keys.getOrCreate('d2');
    expect(other?.equals(a as Buffer)).toBe(false);
    await keys.destroy('d1');
    expect(await keys.get('d1')).toBeNull();
    expect(await keys.getOrCreate('d1')).toBeNull(); // never created again
    expect(await keys.isDestroyed('d1')).toBe(true);
    await keys.destroy('d3'); // a document that never had a key: a tombstone too
    await keys.close();

    // Another process (another store on the file) finds the same.
    const again = new SqliteKeyStore(file);
    expect((await again.get('d2'))?.equals(other as Buffer)).toBe(true);
    expect(await again.isDestroyed('d1')).toBe(true);
    expect(await again.getOrCreate('d3')).toBeNull();
    await again.close();
    const rows = new Database(file, { readonly: true }).prepare('SELECT document_id, key IS NULL AS gone FROM data_keys ORDER BY document_id').all();
    expect(rows).toEqual([
      { document_id: 'd1', gone: 1 },
      { document_id: 'd2', gone: 0 },
      { document_id: 'd3', gone: 1 },
    ]);
  });

  it('a destroy that races a creation leaves the key destroyed', async () => {
    const keys = new SqliteKeyStore(file);
    const created = keys.getOrCreate('d1');
    const destroyed = keys.destroy('d1');
    expect(await created).toHaveLength(32); // created before the destroy was applied
    await destroyed;
    expect(await keys.get('d1')).toBeNull();
    expect(await keys.getOrCreate('d1')).toBeNull();
    await keys.close();
  });

  it('refuses calls once closed, and fails at construction when the file cannot be made', async () => {
    const keys = new SqliteKeyStore(file);
    await keys.getOrCreate('d1');
    await keys.close();
    await keys.close(); // idempotent
    await expect(keys.getOrCreate('d2')).rejects.toThrow(/closed/);
    expect(() => new SqliteKeyStore(path.join(dir, 'missing', 'keys.db'))).toThrow();
  });
});
