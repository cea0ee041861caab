import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { KeyStore } from '../../ports/keyStore';

/**
 * Key store on a SQLite file. `secure_delete` zeroes a destroyed key's bytes in the file,
 * and the rollback journal (not WAL) never keeps an old page once a commit is done.
 * Keys are cached in memory; a destroyed key is dropped from the cache at once.
 */
export class SqliteKeyStore implements KeyStore {
  private readonly db: Database.Database;
  private readonly cache = new Map<string, Buffer | null>();
  private readonly stmts: {
    get: Database.Statement<[string], { key: Buffer | null }>;
    insert: Database.Statement<[string, Buffer, string]>;
    destroy: Database.Statement<[{ id: string; now: string }]>;
  };

  constructor(file: string) {
    this.db = new Database(file);
    this.db.pragma('secure_delete = ON');
    this.db.pragma('journal_mode = DELETE');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(`CREATE TABLE IF NOT EXISTS data_keys (
      document_id TEXT PRIMARY KEY,
      key BLOB,
      created_at TEXT NOT NULL,
      destroyed_at TEXT
    )`);
    this.stmts = {
      get: this.db.prepare('SELECT key FROM data_keys WHERE document_id = ?'),
      insert: this.db.prepare('INSERT OR IGNORE INTO data_keys (document_id, key, created_at) VALUES (?, ?, ?)'),
      destroy: this.db.prepare(
        `INSERT INTO data_keys (document_id, key, created_at, destroyed_at) VALUES (@id, NULL, @now, @now)
         ON CONFLICT(document_id) DO UPDATE SET key = NULL, destroyed_at = COALESCE(destroyed_at, excluded.destroyed_at)`,
      ),
    };
  }

  private lookup(documentId: string): { found: boolean; key: Buffer | null } {
    if (this.cache.has(documentId)) return { found: true, key: this.cache.get(documentId) ?? null };
    const row = this.stmts.get.get(documentId);
    if (!row) return { found: false, key: null };
    this.cache.set(documentId, row.key);
    return { found: true, key: row.key };
  }

  async get(documentId: string): Promise<Buffer | null> {
    return this.lookup(documentId).key;
  }

  async getOrCreate(documentId: string): Promise<Buffer | null> {
    const l = this.lookup(documentId);
    if (l.found) return l.key;
    this.stmts.insert.run(documentId, randomBytes(32), new Date().toISOString());
    this.cache.delete(documentId);
    return this.lookup(documentId).key;
  }

  async destroy(documentId: string): Promise<void> {
    this.stmts.destroy.run({ id: documentId, now: new Date().toISOString() });
    this.cache.set(documentId, null);
  }

  async isDestroyed(documentId: string): Promise<boolean> {
    const l = this.lookup(documentId);
    return l.found && l.key === null;
  }

  async close(): Promise<void> {
    this.cache.clear();
    if (this.db.open) this.db.close();
  }
}
