import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';

/** The SQLite files of the embedded default that may hold document text or keys. */
const STORES = ['events.db', 'read.db', 'search.db', 'keys.db'];

/**
 * The embedded index's FTS5 table is contentless-delete: a deletion leaves a tombstone and
 * the terms stay in their segment until a merge. `optimize` merges every segment into one,
 * so a deleted document's words leave the file. Safe beside the running index (WAL, its own
 * connection; rowids and vectors are untouched).
 */
export function optimizeEmbeddedIndex(file: string): boolean {
  if (!fs.existsSync(file)) return false;
  const db = new Database(file, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    db.pragma('secure_delete = ON');
    const hasFts = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'chunks_fts'").get();
    if (!hasFts) return false;
    db.prepare("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')").run();
    db.pragma('wal_checkpoint(TRUNCATE)');
    return true;
  } finally {
    db.close();
  }
}

/**
 * `kb compact` (server stopped): merge the search index, then checkpoint and VACUUM every
 * SQLite store with secure_delete on, so freed pages holding erased text are gone from the
 * files, not merely unlinked from their b-trees.
 */
export function compactDataDir(dataDir: string, log: (line: string) => void = () => undefined): void {
  optimizeEmbeddedIndex(path.join(dataDir, 'search.db'));
  for (const name of STORES) {
    const file = path.join(dataDir, name);
    if (!fs.existsSync(file)) continue;
    const before = fs.statSync(file).size;
    const db = new Database(file, { fileMustExist: true });
    try {
      db.pragma('busy_timeout = 5000');
      db.pragma('secure_delete = ON');
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.exec('VACUUM');
      db.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      db.close();
    }
    log(`${name}: ${before} -> ${fs.statSync(file).size} bytes`);
  }
}
