/**
 * The embedded index's SQLite file: its tables, the migration of older layouts and the
 * row-id layout (each workspace owns one range of chunk row ids).
 */
import Database from 'better-sqlite3';

/**
 * Chunk row ids are `workspace number · 2^32 + sequence`, so a workspace's chunks form one
 * rowid range that FTS5 queries are restricted to (a search never ranks other workspaces'
 * matches). Files written before this layout (no `schema` in meta) are renumbered on open.
 */
export const WS_SPAN = 2 ** 32;
export const SCHEMA_VERSION = '2';
const MAX_WORKSPACES = 2 ** 20;

/**
 * Opens (creating if needed) the index file: WAL, the chunk, FTS5, checkpoint, meta and
 * workspace-number tables, the temporary tables the stemmer tokenizes with, secure delete,
 * and the migration of older layouts.
 */
export function openIndexDatabase(filePath: string): Database.Database {
  const db = new Database(filePath);
  if (filePath !== ':memory:') db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`
    CREATE TABLE IF NOT EXISTS chunks (
      id INTEGER PRIMARY KEY,
      workspace_id TEXT NOT NULL,
      document_id TEXT NOT NULL,
      document_title TEXT NOT NULL,
      purpose TEXT NOT NULL,
      tags TEXT NOT NULL,
      chunk_index INTEGER NOT NULL,
      content TEXT NOT NULL,
      page INTEGER,
      section TEXT,
      vector BLOB
    );
    CREATE INDEX IF NOT EXISTS chunks_document ON chunks(document_id, chunk_index);
    CREATE INDEX IF NOT EXISTS chunks_workspace ON chunks(workspace_id);
    CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
      title, content, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2');
    CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vocab USING fts5vocab(chunks_fts, 'row');
    CREATE TABLE IF NOT EXISTS checkpoint (id INTEGER PRIMARY KEY CHECK (id = 1), position INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS workspace_numbers (workspace_id TEXT PRIMARY KEY, num INTEGER NOT NULL UNIQUE);
    CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_tokens USING fts5(t, tokenize='porter unicode61 remove_diacritics 2');
    CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_vocab USING fts5vocab(temp, query_tokens, 'row');
    CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_instances USING fts5vocab(temp, query_tokens, 'instance');
  `);
  // A deleted document's text must not linger in the file: SQLite zeroes freed pages and cells.
  // (FTS5 terms of a contentless-delete table stay until a merge: the erasure service merges.)
  db.pragma('secure_delete = ON');
  migrate(db);
  migrateVectorModels(db);
  migrateLexicalGenerations(db);
  return db;
}

/**
 * `chunks.lexgen`: the write generation in which a row's text (title and content) was last
 * set (inserted, or retitled), so that a lexical snapshot of an older generation (as after a
 * crash that followed writes) can be caught up: the rows set after it are indexed again from
 * their text, the others are the snapshot's. Rows of files from before get 0; no snapshot
 * written before the column (an older snapshot format) is ever caught up.
 */
export function migrateLexicalGenerations(db: Database.Database): void {
  const columns = db.prepare<[], { name: string }>('PRAGMA table_info(chunks)').all();
  if (columns.some((c) => c.name === 'lexgen')) return;
  db.exec('ALTER TABLE chunks ADD COLUMN lexgen INTEGER NOT NULL DEFAULT 0');
}

/**
 * Models of files written before vectors recorded their model, by dimensions: the local models
 * of those versions (USE-lite, GloVe-SIF, both concatenated). Other dimensions were an OpenAI
 * model (or another endpoint) whose name the file never held: `unknown:<dims>d`.
 */
const LEGACY_MODEL_BY_DIMENSIONS: ReadonlyMap<number, string> = new Map([
  [100, 'local:glove-sif-100d'],
  [512, 'local:use-lite-512'],
  [612, 'concat(local:use-lite-512*1,local:glove-sif-100d*1)'],
]);

/** The name a model is given in an index file that did not record it. */
export const legacyModelId = (dims: number): string => LEGACY_MODEL_BY_DIMENSIONS.get(dims) ?? `unknown:${dims}d`;

/**
 * Vector models (embedding model changes): `vector_models` numbers each model id, every chunk
 * row records the model of its vector (`chunks.model`), meta `model` names the active model
 * and `next_model` the one being built, whose vectors wait in `next_vectors` by document and
 * chunk index. Files from before get the column, and their vectors the model their
 * dimensions tell (see legacyModelId).
 */
export function migrateVectorModels(db: Database.Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS vector_models (num INTEGER PRIMARY KEY, model_id TEXT NOT NULL UNIQUE, dims INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS next_vectors (
      document_id TEXT NOT NULL, chunk_index INTEGER NOT NULL, model INTEGER NOT NULL, vector BLOB NOT NULL,
      PRIMARY KEY (document_id, chunk_index)) WITHOUT ROWID;
  `);
  const columns = db.prepare<[], { name: string }>('PRAGMA table_info(chunks)').all();
  if (columns.some((c) => c.name === 'model')) return;
  db.transaction(() => {
    db.exec('ALTER TABLE chunks ADD COLUMN model INTEGER');
    const dims = storedDims(db);
    const anyVector = db.prepare('SELECT 1 FROM chunks WHERE vector IS NOT NULL LIMIT 1').get();
    if (dims === undefined || !anyVector) return;
    const num = internVectorModel(db, { modelId: legacyModelId(dims), dimensions: dims });
    db.prepare('UPDATE chunks SET model = ? WHERE vector IS NOT NULL').run(num);
    db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('model', ?)").run(String(num));
  })();
}

/** The number of a model in `vector_models`, assigned on first use. */
export function internVectorModel(db: Database.Database, model: { modelId: string; dimensions: number }): number {
  const known = db.prepare<[string], { num: number; dims: number }>('SELECT num, dims FROM vector_models WHERE model_id = ?').get(model.modelId);
  if (known) {
    if (known.dims !== model.dimensions) throw new Error(`model ${model.modelId} has ${known.dims} dimensions, not ${model.dimensions}`);
    return known.num;
  }
  return Number(db.prepare('INSERT INTO vector_models(model_id, dims) VALUES (?, ?)').run(model.modelId, model.dimensions).lastInsertRowid);
}

/** The model a meta key (`model`, `next_model`) names, if any. */
export function metaModel(db: Database.Database, key: 'model' | 'next_model'): { num: number; modelId: string; dimensions: number } | undefined {
  return db
    .prepare<[string], { num: number; modelId: string; dimensions: number }>(
      'SELECT m.num AS num, m.model_id AS modelId, m.dims AS dimensions FROM meta JOIN vector_models m ON m.num = CAST(meta.value AS INTEGER) WHERE meta.key = ?',
    )
    .get(key);
}

/**
 * Files of an older layout (row ids not grouped by workspace): numbers the workspaces,
 * renumbers the chunks into their workspace's rowid range and rebuilds the FTS index
 * from the chunks table, in one transaction.
 */
export function migrate(db: Database.Database): void {
  const version = db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'schema'").get()?.value;
  if (version === SCHEMA_VERSION) return;
  db.transaction(() => {
    const { n } = db.prepare<[], { n: number }>('SELECT count(*) AS n FROM chunks').get()!;
    if (n > 0) {
      db.exec(`
        INSERT OR IGNORE INTO workspace_numbers(workspace_id, num)
          SELECT workspace_id, (SELECT coalesce(max(num), 0) FROM workspace_numbers) + ROW_NUMBER() OVER (ORDER BY min(id))
          FROM chunks GROUP BY workspace_id;
        CREATE TEMP TABLE renumber (old INTEGER PRIMARY KEY, new INTEGER NOT NULL);
        INSERT INTO temp.renumber(old, new)
          SELECT c.id, w.num * ${WS_SPAN} + ROW_NUMBER() OVER (PARTITION BY c.workspace_id ORDER BY c.id)
          FROM chunks c JOIN workspace_numbers w ON w.workspace_id = c.workspace_id;
        UPDATE chunks SET id = -id;
        UPDATE chunks SET id = (SELECT new FROM temp.renumber WHERE old = -chunks.id);
        DROP TABLE temp.renumber;
        INSERT INTO chunks_fts(chunks_fts) VALUES ('delete-all');
        INSERT INTO chunks_fts(rowid, title, content) SELECT id, document_title, content FROM chunks;
      `);
    }
    db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema', ?)").run(SCHEMA_VERSION);
  })();
}

/** The vector dimensions recorded in the file, if any. */
export function storedDims(db: Database.Database): number | undefined {
  const dims = db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'dims'").get();
  return dims ? Number(dims.value) : undefined;
}

/** Workspace numbers (persistent) and fresh row ids within each workspace's range. */
export class RowIds {
  private readonly workspaces = new Map<string, number>();
  private readonly nextRow = new Map<number, number>();

  constructor(private readonly db: Database.Database) {
    for (const r of db.prepare<[], { workspace_id: string; num: number }>('SELECT workspace_id, num FROM workspace_numbers').iterate()) {
      this.workspaces.set(r.workspace_id, r.num);
    }
  }

  /** The workspace's number, if it has one. */
  workspaceNumber(workspaceId: string): number | undefined {
    return this.workspaces.get(workspaceId);
  }

  /** The workspace's persistent number (its rowid range), assigned on first use. */
  internWorkspace(workspaceId: string): number {
    let w = this.workspaces.get(workspaceId);
    if (w === undefined) {
      const max = this.db.prepare<[], { m: number | null }>('SELECT max(num) AS m FROM workspace_numbers').get()?.m ?? 0;
      w = max + 1;
      if (w >= MAX_WORKSPACES) throw new Error('too many workspaces in one search index');
      this.db.prepare('INSERT INTO workspace_numbers(workspace_id, num) VALUES (?, ?)').run(workspaceId, w);
      this.workspaces.set(workspaceId, w);
    }
    return w;
  }

  /** A fresh row id in the workspace's range. */
  allocateRow(ws: number): number {
    let next = this.nextRow.get(ws);
    if (next === undefined) {
      const lo = ws * WS_SPAN;
      const max = this.db.prepare<[number, number], { m: number | null }>('SELECT max(id) AS m FROM chunks WHERE id BETWEEN ? AND ?').get(lo, lo + WS_SPAN - 1)?.m;
      next = max === null || max === undefined ? lo + 1 : max + 1;
    }
    if (next >= (ws + 1) * WS_SPAN) throw new Error('workspace row range exhausted');
    this.nextRow.set(ws, next + 1);
    return next;
  }

  /** Forgets the allocation cursors (after the chunks were deleted); workspace numbers stay. */
  clearRows(): void {
    this.nextRow.clear();
  }
}

