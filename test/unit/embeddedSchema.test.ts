import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrate, openIndexDatabase, RowIds, SCHEMA_VERSION, storedDims, WS_SPAN } from '../../src/adapters/embedded/schema';

describe('embedded index schema', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-schema-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('creates the tables, WAL for files, secure delete, and records the schema version', () => {
    const db = openIndexDatabase(path.join(dir, 'new.sqlite'));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('secure_delete', { simple: true })).toBe(1);
    const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((r) => r.name);
    expect(tables).toEqual(expect.arrayContaining(['chunks', 'chunks_fts', 'chunks_vocab', 'checkpoint', 'meta', 'workspace_numbers']));
    expect(db.prepare("SELECT value FROM meta WHERE key = 'schema'").pluck().get()).toBe(SCHEMA_VERSION);
    expect(storedDims(db)).toBeUndefined();
    db.prepare("INSERT INTO meta(key, value) VALUES ('dims', '384')").run();
    expect(storedDims(db)).toBe(384);
    db.close();
  });

  it('renumbers an older file\'s chunks into their workspace\'s row range and rebuilds the FTS index', () => {
    const file = path.join(dir, 'old.sqlite');
    const db = openIndexDatabase(file);
    // Simulate the old layout: sequential row ids across workspaces, no schema version.
    const ins = db.prepare(`INSERT INTO chunks (id, workspace_id, document_id, document_title, purpose, tags, chunk_index, content)
      VALUES (?, ?, ?, 'T', 'KNOWLEDGE', '[]', ?, ?)`);
    ins.run(1, 'w1', 'a', 0, 'supersonic wing');
    ins.run(2, 'w2', 'b', 0, 'laminar flow');
    ins.run(3, 'w1', 'a', 1, 'shock wave');
    db.exec("DELETE FROM meta WHERE key = 'schema'");
    migrate(db);
    const rows = db.prepare<[], { id: number; workspace_id: string }>('SELECT id, workspace_id FROM chunks ORDER BY id').all();
    expect(rows).toEqual([
      { id: WS_SPAN + 1, workspace_id: 'w1' },
      { id: WS_SPAN + 2, workspace_id: 'w1' },
      { id: 2 * WS_SPAN + 1, workspace_id: 'w2' },
    ]);
    expect(db.prepare("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'shock'").pluck().all()).toEqual([WS_SPAN + 2]);
    expect(db.prepare("SELECT value FROM meta WHERE key = 'schema'").pluck().get()).toBe(SCHEMA_VERSION);
    // Migrating again changes nothing.
    migrate(db);
    expect(db.prepare('SELECT id FROM chunks ORDER BY id').pluck().all()).toEqual([WS_SPAN + 1, WS_SPAN + 2, 2 * WS_SPAN + 1]);
    db.close();
  });

  it('numbers workspaces persistently and allocates row ids within their ranges', () => {
    const file = path.join(dir, 'rows.sqlite');
    let db = openIndexDatabase(file);
    let ids = new RowIds(db);
    expect(ids.workspaceNumber('w')).toBeUndefined();
    expect([ids.internWorkspace('w'), ids.internWorkspace('v'), ids.internWorkspace('w')]).toEqual([1, 2, 1]);
    expect([ids.allocateRow(1), ids.allocateRow(1), ids.allocateRow(2)]).toEqual([WS_SPAN + 1, WS_SPAN + 2, 2 * WS_SPAN + 1]);
    db.prepare("INSERT INTO chunks (id, workspace_id, document_id, document_title, purpose, tags, chunk_index, content) VALUES (?, 'w', 'a', 'T', 'KNOWLEDGE', '[]', 0, 'x')")
      .run(WS_SPAN + 7);
    db.close();
    // Reopened: numbers come from the file and allocation resumes after the largest row id.
    db = new Database(file);
    ids = new RowIds(db);
    expect(ids.workspaceNumber('v')).toBe(2);
    expect(ids.allocateRow(1)).toBe(WS_SPAN + 8);
    ids.clearRows();
    db.exec('DELETE FROM chunks');
    expect(ids.allocateRow(1)).toBe(WS_SPAN + 1);
    expect(ids.internWorkspace('u')).toBe(3);
    db.close();
  });
});
