import Database from 'better-sqlite3';
import type {
  DocumentFields,
  IndexedChunk,
  Purpose,
  SearchFilters,
  SearchHit,
  SearchIndex,
  SearchRequest,
} from '../../ports/searchIndex';
import { type Candidate, type Fused, type HybridConfig, type HybridOverrides, type RankMode, fuse, resolveHybridConfig } from '../../search/hybrid';
import { createMemory, createScanner, type ScanFn, type WasmMemory, WASM_PAGE as PAGE } from './int8Scan';
import { unitVector } from '../../search/unitVector';

export interface EmbeddedSearchIndexOptions {
  hybrid?: HybridOverrides;
}

/** A BM25 query term: its text (quoted for MATCH), its stem and its weight in the query. */
interface WeightedTerm {
  text: string;
  stem: string;
  weight: number;
  /** A term of the user's query (not an expansion term). */
  original: boolean;
}

const STEM_CACHE_LIMIT = 50_000;

/** Words dropped from full-text queries (kept if the query has nothing else). */
const STOPWORDS = new Set(
  ('a about above after again against all am an and any are as at be because been before being below between both but by ' +
    'can could did do does doing down during each few for from further had has have having he her here hers herself him ' +
    'himself his how i if in into is it its itself just me more most must my myself no nor not now of off on once only or ' +
    'other our ours ourselves out over own same she should so some such than that the their theirs them themselves then ' +
    'there these they this those through to too under until up very was we were what when where which while who whom why ' +
    'will with would you your yours yourself yourselves')
    .split(' '),
);
const MAX_QUERY_TERMS = 64;
/**
 * Chunk row ids are `workspace number · 2^32 + sequence`, so a workspace's chunks form one
 * rowid range that FTS5 queries are restricted to (a search never ranks other workspaces'
 * matches). Files written before this layout (no `schema` in meta) are renumbered on open.
 */
const WS_SPAN = 2 ** 32;
const SCHEMA_VERSION = '2';
const BM25_K1 = 1.2; // FTS5's constants
const BM25_B = 0.75;
const QUERY_REGION = 16384; // bytes reserved for the int16 query (dims <= 8192)

/** Terms of user text, safe to quote for FTS5 MATCH. */
export function queryTerms(text: string): string[] {
  const all = (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((t) => t.length <= 64);
  const content = all.filter((t) => !STOPWORDS.has(t));
  const chosen = content.length > 0 ? content : all;
  return [...new Set(chosen)].slice(0, MAX_QUERY_TERMS);
}

/** Lower-cased words of text as FTS5's unicode61 tokenizer splits them (letters and digits). */
function wordsOf(text: string): string[] {
  // Pure ASCII text (the common case) takes a cheaper, equivalent expression.
  // eslint-disable-next-line no-control-regex
  return (/^[\x00-\x7f]*$/.test(text) ? text.toLowerCase().match(/[a-z0-9]+/g) : text.toLowerCase().match(/[\p{L}\p{N}]+/gu)) ?? [];
}

/** FTS5 MATCH expression ORing the quoted terms; never a syntax error. */
export function toMatchExpression(terms: string[]): string {
  return terms.map((t) => `"${t.replace(/"/g, '""')}"`).join(' OR ');
}

const PURPOSE_CODE: Record<Purpose, number> = { KNOWLEDGE: 1, INSTRUCTION: 2 };

interface ChunkRow {
  id: number;
  workspace_id: string;
  document_id: string;
  document_title: string;
  purpose: Purpose;
  tags: string;
  chunk_index: number;
  content: string;
  page: number | null;
  section: string | null;
  vector: Buffer | null;
}

/** Documents a search may return: a mask over interned ids, their list and chunk count. */
interface Scope {
  mask: Uint8Array;
  docs: number[];
  chunks: number;
  /** The workspace's number (its rowid range) and its chunk count. */
  workspace: number;
  workspaceChunks: number;
}

interface DocInfo {
  workspace: number;
  purpose: number;
  tags: string[];
  chunks: number;
}

/**
 * Embedded SearchIndex: one SQLite file (WAL) with an FTS5 table for BM25 and a chunk
 * table holding metadata and float32 vectors; the vectors are also held in memory as
 * int8 (per-vector scale) in WebAssembly memory, scanned with SIMD for dense kNN, and
 * the top candidates are re-scored exactly from the stored float32 vectors.
 */
export class EmbeddedSearchIndex implements SearchIndex {
  private readonly db: Database.Database;
  private cfg: HybridConfig;
  private dims = 0;
  private stride = 0;
  private queryMax = 0;
  private capacity = 0;
  private highWater = 0;
  private memory?: WasmMemory;
  private scan?: ScanFn;
  private readonly free: number[] = [];
  private rowOf = new Float64Array(0);
  private docOf = new Int32Array(0);
  private invScale = new Float32Array(0);
  private live = new Uint8Array(0);
  private readonly slotOfRow = new Map<number, number>();
  private readonly docIds = new Map<string, number>();
  private readonly docNames: string[] = [];
  private readonly docs: (DocInfo | undefined)[] = [];
  /** Live slots of each document, ascending (runs of them are scanned together). */
  private docSlots: (number[] | undefined)[] = [];
  /** Documents of each workspace (interned ids), so a search touches only its workspace. */
  private readonly workspaceDocs = new Map<number, Set<number>>();
  /** Chunks of each workspace (the sum over its documents). */
  private readonly workspaceChunks = new Map<number, number>();
  private readonly workspaces = new Map<string, number>();
  private liveCount = 0;
  private closed = false;
  /** Prepared statements by SQL text: writes and searches run the same few again and again. */
  private readonly statements = new Map<string, Database.Statement>();

  private statement<P extends unknown[] = unknown[], R = unknown>(sql: string): Database.Statement<P, R> {
    let st = this.statements.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      if (this.statements.size >= 200) this.statements.clear();
      this.statements.set(sql, st);
    }
    return st as unknown as Database.Statement<P, R>;
  }

  constructor(filePath: string, options: EmbeddedSearchIndexOptions = {}) {
    this.cfg = resolveHybridConfig(options.hybrid);
    this.db = new Database(filePath);
    if (filePath !== ':memory:') this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(`
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
    this.db.pragma('secure_delete = ON');
    this.migrate();
    for (const r of this.db.prepare<[], { workspace_id: string; num: number }>('SELECT workspace_id, num FROM workspace_numbers').iterate()) {
      this.workspaces.set(r.workspace_id, r.num);
    }
    const dims = this.db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'dims'").get();
    if (dims) this.setDims(Number(dims.value));
    this.load();
  }

  /**
   * Files of an older layout (row ids not grouped by workspace): numbers the workspaces,
   * renumbers the chunks into their workspace's rowid range and rebuilds the FTS index
   * from the chunks table, in one transaction.
   */
  private migrate(): void {
    const version = this.db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'schema'").get()?.value;
    if (version === SCHEMA_VERSION) return;
    this.db.transaction(() => {
      const { n } = this.db.prepare<[], { n: number }>('SELECT count(*) AS n FROM chunks').get()!;
      if (n > 0) {
        this.db.exec(`
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
      this.db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('schema', ?)").run(SCHEMA_VERSION);
    })();
  }

  /** Current ranking configuration. */
  get hybridConfig(): HybridConfig {
    return this.cfg;
  }

  /** Changes the ranking configuration (used by the evaluation to compare settings). */
  configure(hybrid: HybridOverrides): void {
    this.cfg = resolveHybridConfig({ ...this.cfg, ...hybrid, dense: { ...this.cfg.dense, ...hybrid.dense }, prf: { ...this.cfg.prf, ...hybrid.prf } });
  }

  // ---------------------------------------------------------------- in-memory vectors

  private setDims(dims: number): void {
    if (!Number.isInteger(dims) || dims <= 0 || dims * 2 > QUERY_REGION) throw new Error(`unsupported vector dimensions: ${dims}`);
    this.dims = dims;
    this.stride = Math.ceil(dims / 64) * 64; // the scanner reads 64 bytes per step
    this.queryMax = Math.min(32767, Math.floor(0x7fffffff / (127 * this.stride)));
  }

  private ensureCapacity(needed: number): void {
    if (needed <= this.capacity) return;
    let cap = Math.max(1024, this.capacity);
    while (cap < needed) cap *= 2;
    const bytes = QUERY_REGION + cap * this.stride + cap * 4;
    const pages = Math.ceil(bytes / PAGE);
    if (!this.memory) {
      this.memory = createMemory(pages);
      this.scan = createScanner(this.memory);
    } else {
      const have = this.memory.buffer.byteLength / PAGE;
      if (pages > have) this.memory.grow(pages - have);
    }
    const grow = <T extends Float64Array | Int32Array | Float32Array | Uint8Array>(old: T, make: (n: number) => T): T => {
      const next = make(cap);
      next.set(old);
      return next;
    };
    this.rowOf = grow(this.rowOf, (n) => new Float64Array(n));
    this.docOf = grow(this.docOf, (n) => new Int32Array(n));
    this.invScale = grow(this.invScale, (n) => new Float32Array(n));
    this.live = grow(this.live, (n) => new Uint8Array(n));
    this.capacity = cap;
  }

  private vectorsView(): Int8Array {
    // Vectors start right after the query region and never move when memory grows.
    return new Int8Array(this.memory!.buffer, QUERY_REGION, this.capacity * this.stride);
  }

  private addSlot(rowId: number, doc: number, vector: Float32Array | null): void {
    const slot = this.free.length > 0 ? this.free.pop()! : this.highWater++;
    this.ensureCapacity(slot + 1);
    this.rowOf[slot] = rowId;
    this.docOf[slot] = doc;
    this.live[slot] = 1;
    this.slotOfRow.set(rowId, slot);
    this.liveCount++;
    this.writes++;
    const slots = (this.docSlots[doc] ??= []);
    slots.push(slot);
    if (slots.length > 1 && slots[slots.length - 2] > slot) slots.sort((a, b) => a - b);
    const view = this.vectorsView();
    const base = slot * this.stride;
    view.fill(0, base, base + this.stride);
    let max = 0;
    if (vector) for (let i = 0; i < vector.length; i++) max = Math.max(max, Math.abs(vector[i]));
    if (vector && max > 0) {
      const s = 127 / max;
      for (let i = 0; i < vector.length; i++) view[base + i] = Math.round(vector[i] * s);
      this.invScale[slot] = max / 127;
    } else {
      this.invScale[slot] = 0;
    }
  }

  private removeSlot(rowId: number): void {
    const slot = this.slotOfRow.get(rowId);
    if (slot === undefined) return;
    this.slotOfRow.delete(rowId);
    this.live[slot] = 0;
    this.invScale[slot] = 0;
    this.liveCount--;
    this.writes++;
    this.free.push(slot);
  }

  private internDoc(documentId: string): number {
    let d = this.docIds.get(documentId);
    if (d === undefined) {
      d = this.docNames.length;
      this.docIds.set(documentId, d);
      this.docNames.push(documentId);
    }
    return d;
  }

  /** The workspace's persistent number (its rowid range), assigned on first use. */
  private internWorkspace(workspaceId: string): number {
    let w = this.workspaces.get(workspaceId);
    if (w === undefined) {
      const max = this.db.prepare<[], { m: number | null }>('SELECT max(num) AS m FROM workspace_numbers').get()?.m ?? 0;
      w = max + 1;
      if (w >= 2 ** 20) throw new Error('too many workspaces in one search index');
      this.db.prepare('INSERT INTO workspace_numbers(workspace_id, num) VALUES (?, ?)').run(workspaceId, w);
      this.workspaces.set(workspaceId, w);
    }
    return w;
  }

  private readonly nextRow = new Map<number, number>();

  /** A fresh row id in the workspace's range. */
  private allocateRow(ws: number): number {
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

  private setDoc(doc: number, info: DocInfo): void {
    this.unsetDoc(doc);
    this.scopeCache.clear();
    this.docs[doc] = info;
    let set = this.workspaceDocs.get(info.workspace);
    if (!set) this.workspaceDocs.set(info.workspace, (set = new Set()));
    set.add(doc);
    this.workspaceChunks.set(info.workspace, (this.workspaceChunks.get(info.workspace) ?? 0) + info.chunks);
  }

  private unsetDoc(doc: number): void {
    this.scopeCache.clear();
    const info = this.docs[doc];
    if (info) {
      this.workspaceDocs.get(info.workspace)?.delete(doc);
      this.workspaceChunks.set(info.workspace, (this.workspaceChunks.get(info.workspace) ?? 0) - info.chunks);
    }
    this.docs[doc] = undefined;
    this.docSlots[doc] = undefined;
  }

  private load(): void {
    const rows = this.db
      .prepare<[], Pick<ChunkRow, 'id' | 'workspace_id' | 'document_id' | 'purpose' | 'tags' | 'vector'>>(
        'SELECT id, workspace_id, document_id, purpose, tags, vector FROM chunks ORDER BY id',
      )
      .iterate();
    for (const r of rows) {
      const doc = this.internDoc(r.document_id);
      const info = this.docs[doc];
      if (info) {
        info.chunks++;
        this.workspaceChunks.set(info.workspace, (this.workspaceChunks.get(info.workspace) ?? 0) + 1);
      }
      else
        this.setDoc(doc, {
          workspace: this.internWorkspace(r.workspace_id),
          purpose: PURPOSE_CODE[r.purpose],
          tags: JSON.parse(r.tags) as string[],
          chunks: 1,
        });
      const vector = r.vector ? bufferToFloats(r.vector) : null;
      if (vector && this.dims === 0) this.setDims(vector.length);
      if (this.dims > 0) this.addSlot(r.id, doc, vector);
      else this.pendingWithoutVector.push({ id: r.id, doc });
    }
  }

  /** Rows loaded before any vector fixed the dimensions (only vector-less chunks). */
  private readonly pendingWithoutVector: { id: number; doc: number }[] = [];

  private fixDims(dims: number): void {
    this.setDims(dims);
    this.statement("INSERT OR REPLACE INTO meta(key, value) VALUES ('dims', ?)").run(String(dims));
    for (const p of this.pendingWithoutVector.splice(0)) this.addSlot(p.id, p.doc, null);
  }

  // ---------------------------------------------------------------- writes

  async upsertDocument(documentId: string, chunks: IndexedChunk[]): Promise<void> {
    this.assertOpen();
    const prepared = chunks.map((c) => {
      if (c.documentId !== documentId) throw new Error(`chunk of ${c.documentId} upserted as ${documentId}`);
      const v = c.vector.length > 0 ? unitVector(c.vector) : null;
      return { c, v };
    });
    const firstDims = prepared.find((p) => p.v)?.v?.length;
    if (firstDims !== undefined && this.dims === 0) this.fixDims(firstDims);
    for (const p of prepared) {
      if (p.v && p.v.length !== this.dims) throw new Error(`vector has ${p.v.length} dimensions, index has ${this.dims}`);
    }
    const insert = this.statement(
      `INSERT INTO chunks (id, workspace_id, document_id, document_title, purpose, tags, chunk_index, content, page, section, vector)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const wsOf = new Map<string, number>();
    for (const c of chunks) if (!wsOf.has(c.workspaceId)) wsOf.set(c.workspaceId, this.internWorkspace(c.workspaceId));
    const insertFts = this.statement('INSERT INTO chunks_fts(rowid, title, content) VALUES (?, ?, ?)');
    const tx = this.db.transaction(() => {
      this.deleteRows(documentId);
      const added: { id: number; v: Float32Array | null }[] = [];
      for (const { c, v } of prepared) {
        const info = insert.run(
          this.allocateRow(wsOf.get(c.workspaceId)!),
          c.workspaceId,
          documentId,
          c.documentTitle,
          c.purpose,
          JSON.stringify(c.tags),
          c.chunkIndex,
          c.content,
          c.page ?? null,
          c.section ?? null,
          v ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : null,
        );
        const id = Number(info.lastInsertRowid);
        insertFts.run(id, c.documentTitle, c.content);
        added.push({ id, v });
      }
      return added;
    });
    const added = tx();
    if (chunks.length === 0) return;
    const doc = this.internDoc(documentId);
    const first = chunks[0];
    this.setDoc(doc, {
      workspace: this.internWorkspace(first.workspaceId),
      purpose: PURPOSE_CODE[first.purpose],
      tags: [...first.tags],
      chunks: chunks.length,
    });
    if (this.dims === 0) {
      for (const a of added) this.pendingWithoutVector.push({ id: a.id, doc });
    } else {
      for (const a of added) this.addSlot(a.id, doc, a.v);
    }
  }

  /** Deletes a document's rows in SQL and memory; call inside a transaction. */
  private deleteRows(documentId: string): void {
    const ids = this.statement<[string], { id: number }>('SELECT id FROM chunks WHERE document_id = ?').all(documentId);
    if (ids.length === 0) return;
    const delFts = this.statement('DELETE FROM chunks_fts WHERE rowid = ?');
    for (const { id } of ids) {
      delFts.run(id);
      this.removeSlot(id);
    }
    this.statement('DELETE FROM chunks WHERE document_id = ?').run(documentId);
    const d = this.docIds.get(documentId);
    if (d !== undefined) this.unsetDoc(d);
    const pending = this.pendingWithoutVector;
    for (let i = pending.length - 1; i >= 0; i--) if (d !== undefined && pending[i].doc === d) pending.splice(i, 1);
  }

  async deleteDocument(documentId: string): Promise<void> {
    this.assertOpen();
    this.db.transaction(() => this.deleteRows(documentId))();
  }

  async deleteWorkspace(workspaceId: string): Promise<void> {
    this.assertOpen();
    const docs = this.statement<[string], { document_id: string }>('SELECT DISTINCT document_id FROM chunks WHERE workspace_id = ?')
      .all(workspaceId);
    this.db.transaction(() => {
      for (const d of docs) this.deleteRows(d.document_id);
    })();
  }

  async updateDocumentFields(documentId: string, fields: DocumentFields): Promise<void> {
    this.assertOpen();
    const d = this.docIds.get(documentId);
    const info = d === undefined ? undefined : this.docs[d];
    if (!info) return;
    this.db.transaction(() => {
      if (fields.purpose !== undefined) this.statement('UPDATE chunks SET purpose = ? WHERE document_id = ?').run(fields.purpose, documentId);
      if (fields.tags !== undefined) this.statement('UPDATE chunks SET tags = ? WHERE document_id = ?').run(JSON.stringify(fields.tags), documentId);
      if (fields.documentTitle !== undefined) {
        this.statement('UPDATE chunks SET document_title = ? WHERE document_id = ?').run(fields.documentTitle, documentId);
        const rows = this.statement<[string], { id: number; content: string }>('SELECT id, content FROM chunks WHERE document_id = ?').all(documentId);
        const del = this.statement('DELETE FROM chunks_fts WHERE rowid = ?');
        const ins = this.statement('INSERT INTO chunks_fts(rowid, title, content) VALUES (?, ?, ?)');
        for (const r of rows) {
          del.run(r.id);
          ins.run(r.id, fields.documentTitle, r.content);
        }
        this.writes += rows.length;
      }
    })();
    if (fields.purpose !== undefined) info.purpose = PURPOSE_CODE[fields.purpose];
    if (fields.tags !== undefined) info.tags = [...fields.tags];
    this.scopeCache.clear();
  }

  async clear(): Promise<void> {
    this.assertOpen();
    this.db.exec("DELETE FROM chunks; DELETE FROM chunks_fts; DELETE FROM checkpoint; DELETE FROM meta WHERE key = 'dims';");
    this.slotOfRow.clear();
    this.nextRow.clear();
    this.free.length = 0;
    this.highWater = 0;
    this.liveCount = 0;
    this.writes++;
    this.dfCache.clear();
    this.live.fill(0);
    this.docs.length = 0;
    this.docSlots = [];
    this.workspaceDocs.clear();
    this.workspaceChunks.clear();
    this.scopeCache.clear();
    this.pendingWithoutVector.length = 0;
    this.dims = 0;
    this.capacity = 0;
    this.memory = undefined;
    this.scan = undefined;
    this.rowOf = new Float64Array(0);
    this.docOf = new Int32Array(0);
    this.invScale = new Float32Array(0);
    this.live = new Uint8Array(0);
  }

  async getCheckpoint(): Promise<number> {
    this.assertOpen();
    const row = this.statement<[], { position: number }>('SELECT position FROM checkpoint WHERE id = 1').get();
    return row ? row.position : 0;
  }

  async setCheckpoint(position: number): Promise<void> {
    this.assertOpen();
    this.statement('INSERT INTO checkpoint(id, position) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET position = excluded.position').run(position);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('search index is closed');
  }

  // ---------------------------------------------------------------- reads

  /** Allowed-document mask for filters, or undefined when the workspace is unknown. */
  private docMask(filters: SearchFilters): Uint8Array | undefined {
    return this.docScope(filters)?.mask;
  }

  /** Allowed documents and how many chunks they hold. */
  /** Scopes of recent filters; any change to documents' membership or fields empties it. */
  private readonly scopeCache = new Map<string, Scope>();

  private docScope(filters: SearchFilters): Scope | undefined {
    const key = JSON.stringify([filters.workspaceId, filters.purpose ?? null, filters.tags ?? null, filters.documentIds ?? null]);
    const cached = this.scopeCache.get(key);
    if (cached) return cached;
    const scope = this.computeScope(filters);
    if (scope) {
      if (this.scopeCache.size >= 32) this.scopeCache.clear();
      this.scopeCache.set(key, scope);
    }
    return scope;
  }

  private computeScope(filters: SearchFilters): Scope | undefined {
    const ws = this.workspaces.get(filters.workspaceId);
    if (ws === undefined) return undefined;
    const mask = new Uint8Array(this.docNames.length);
    const purpose = filters.purpose ? PURPOSE_CODE[filters.purpose] : 0;
    const tags = filters.tags ? new Set(filters.tags) : undefined;
    const consider = (d: number): void => {
      const info = this.docs[d];
      if (!info || info.workspace !== ws) return;
      if (purpose && info.purpose !== purpose) return;
      if (tags && !info.tags.some((t) => tags.has(t))) return;
      if (mask[d] === 0) {
        chunks += info.chunks;
        docs.push(d);
      }
      mask[d] = 1;
    };
    const docs: number[] = [];
    let chunks = 0;
    if (filters.documentIds) {
      for (const id of filters.documentIds) {
        const d = this.docIds.get(id);
        if (d !== undefined) consider(d);
      }
    } else {
      for (const d of this.workspaceDocs.get(ws) ?? []) consider(d);
    }
    return { mask, chunks, docs, workspace: ws, workspaceChunks: this.workspaceChunks.get(ws) ?? 0 };
  }

  async countDocuments(filters: SearchFilters): Promise<number> {
    this.assertOpen();
    const mask = this.docMask(filters);
    if (!mask) return 0;
    let n = 0;
    for (let d = 0; d < mask.length; d++) n += mask[d];
    return n;
  }

  /**
   * Top `m` rows by approximate (int8) cosine among the scope's documents. A scope that is
   * a small part of the index is scanned alone, run by run of contiguous slots of its
   * documents; a large one in a single pass over all slots, filtered by the mask.
   */
  private denseCandidates(query: Float32Array, scope: Scope, m: number): number[] {
    if (!this.scan || !this.memory || this.highWater === 0 || scope.chunks === 0) return [];
    let qmax = 0;
    for (let i = 0; i < query.length; i++) qmax = Math.max(qmax, Math.abs(query[i]));
    if (qmax === 0) return [];
    const q16 = new Int16Array(this.memory.buffer, 0, this.stride);
    q16.fill(0);
    const qs = this.queryMax / qmax;
    for (let i = 0; i < query.length; i++) q16[i] = Math.round(query[i] * qs);
    const n = this.highWater;
    const outOff = QUERY_REGION + this.capacity * this.stride;
    const out = new Int32Array(this.memory.buffer, outOff, n);
    // Bounded min-heap of (score, slot).
    const heapScore = new Float64Array(m);
    const heapSlot = new Int32Array(m);
    let size = 0;
    const inv = this.invScale;
    const offer = (s: number): void => {
      const score = out[s] * inv[s];
      if (size < m) {
        let i = size++;
        while (i > 0) {
          const p = (i - 1) >> 1;
          if (heapScore[p] <= score) break;
          heapScore[i] = heapScore[p];
          heapSlot[i] = heapSlot[p];
          i = p;
        }
        heapScore[i] = score;
        heapSlot[i] = s;
      } else if (score > heapScore[0]) {
        let i = 0;
        for (;;) {
          const l = 2 * i + 1;
          if (l >= size) break;
          const r = l + 1;
          const c = r < size && heapScore[r] < heapScore[l] ? r : l;
          if (heapScore[c] >= score) break;
          heapScore[i] = heapScore[c];
          heapSlot[i] = heapSlot[c];
          i = c;
        }
        heapScore[i] = score;
        heapSlot[i] = s;
      }
    };
    if (scope.chunks * 4 >= this.liveCount) {
      this.scan(QUERY_REGION, n, this.stride, 0, outOff);
      const live = this.live;
      const docOf = this.docOf;
      const mask = scope.mask;
      for (let s = 0; s < n; s++) if (live[s] !== 0 && mask[docOf[s]] !== 0) offer(s);
    } else {
      for (const d of scope.docs) {
        const slots = this.docSlots[d];
        if (!slots) continue;
        for (let i = 0; i < slots.length; ) {
          let j = i + 1;
          while (j < slots.length && slots[j] === slots[j - 1] + 1) j++;
          const first = slots[i];
          this.scan(QUERY_REGION + first * this.stride, j - i, this.stride, 0, outOff + first * 4);
          for (let t = i; t < j; t++) offer(slots[t]);
          i = j;
        }
      }
    }
    const order = Array.from({ length: size }, (_, i) => i).sort((a, b) => heapScore[b] - heapScore[a]);
    return order.map((i) => this.rowOf[heapSlot[i]]);
  }

  /** Rows matching the terms within the filters, best BM25 first, with normalised scores. */
  private lexicalCandidates(
    terms: WeightedTerm[],
    filters: SearchFilters,
    scope: Scope,
    m: number,
    pool: number[] = [],
    known?: Map<number, ChunkRow>,
    newTerms = 0,
  ): { id: number; lexical: number }[] {
    if (terms.length === 0 || scope.chunks === 0) return [];
    const titleWeight = Number(this.cfg.titleWeight) || 0;
    const lo = scope.workspace * WS_SPAN;
    const hi = lo + WS_SPAN - 1;
    const inScope = (id: number): boolean => {
      const slot = this.slotOfRow.get(id);
      return slot !== undefined && scope.mask[this.docOf[slot]] === 1;
    };
    const w0 = terms[0].weight;
    const uniform = terms.every((t) => t.weight === w0);
    let rows: { id: number; s: number }[];
    if (uniform) {
      // Equal weights: one OR query, ranked and limited by FTS5.
      const match = toMatchExpression(terms.map((t) => t.text));
      if (this.dims > 0) {
        // Rank in FTS5 alone within the workspace's rowid range (no per-match join) and
        // filter with the in-memory mask, reading deeper until m rows pass.
        const share = scope.chunks / Math.max(1, scope.workspaceChunks);
        const stmt = this.statement<[string, number, number, number], { id: number; s: number }>(
          `SELECT rowid AS id, bm25(chunks_fts, ${titleWeight}, 1.0) AS s FROM chunks_fts
           WHERE chunks_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY s LIMIT ?`,
        );
        let limit = Math.ceil((m / Math.max(share, 1e-9)) * 1.5) + 10;
        for (;;) {
          const all = stmt.all(match, lo, hi, limit);
          rows = share >= 1 ? all : all.filter((r) => inScope(r.id));
          if (rows.length >= m || all.length < limit) break;
          limit *= 4;
        }
        rows = rows.slice(0, m);
      } else {
        // Chunks without vectors before any vector fixed the dimensions are not in memory.
        rows = this.lexicalJoin(match, filters, m, titleWeight, lo, hi);
      }
      rows = rows.map((r) => ({ id: r.id, s: -r.s * w0 }));
    } else {
      // Weighted query (feedback): FTS5's bm25() has no per-term weights. The pool, the first
      // pass's deeper lexical hits plus the top rows of the few strongest expansion terms
      // (chunks that share no word with the query), is re-scored here with FTS5's BM25 formula
      // and statistics and the terms' weights. (An FTS5 query over every expanded term would
      // match most of a large index: too slow.)
      const ids = new Set(pool);
      // Strongest = largest possible contribution, weight · idf (rarer terms also have
      // shorter posting lists, so the query stays cheap).
      const df = this.docFrequencies(terms.map((t) => t.stem));
      const n = Math.max(1, this.liveCount);
      const reach = (t: WeightedTerm): number => {
        const d = df.get(t.stem) ?? 0;
        return t.weight * Math.max(1e-6, Math.log((n - d + 0.5) / (d + 0.5)));
      };
      const strongest = terms
        .filter((t) => !t.original)
        .sort((a, b) => reach(b) - reach(a))
        .slice(0, Math.max(0, Math.floor(newTerms)))
        .map((t) => ({ ...t, weight: 1 }));
      if (strongest.length > 0) for (const r of this.lexicalCandidates(strongest, filters, scope, m)) ids.add(r.id);
      rows = this.weightedBm25([...ids], terms, titleWeight, known)
        .sort((a, b) => b.s - a.s || a.id - b.id)
        .slice(0, m);
    }
    if (rows.length === 0) return [];
    // Normalised by the best score the weighted query could reach: expansion terms take a
    // share of the evidence instead of adding to it, so scores keep their bands with feedback.
    const best = this.maxBm25(terms);
    return rows.map((r) => ({ id: r.id, lexical: best > 0 ? Math.min(1, r.s / best) : 0 }));
  }

  /**
   * FTS5's BM25 (k1 = 1.2, b = 0.75, column-weighted frequencies, IDF and average length
   * over the whole index) of the given rows for weighted terms, computed here from the
   * rows' text with FTS5's stemmer; positive, higher is better.
   */
  private weightedBm25(ids: number[], terms: WeightedTerm[], titleWeight: number, known?: Map<number, ChunkRow>): { id: number; s: number }[] {
    if (ids.length === 0) return [];
    const { rows: n, avgLength } = this.averages();
    const df = this.docFrequencies(terms.map((t) => t.stem));
    const termOf = new Map(terms.map((t, i) => [t.stem, i]));
    const weight = terms.map((t) => t.weight);
    const idf = terms.map((t) => Math.max(Math.log((n - (df.get(t.stem) ?? 0) + 0.5) / ((df.get(t.stem) ?? 0) + 0.5)), 1e-6));
    const texts: { id: number; document_title: string; content: string }[] = [];
    const missing: number[] = [];
    for (const id of ids) {
      const r = known?.get(id);
      if (r) texts.push(r);
      else missing.push(id);
    }
    if (missing.length > 0) {
      texts.push(
        ...this.statement<[string], { id: number; document_title: string; content: string }>(
            'SELECT id, document_title, content FROM chunks WHERE id IN (SELECT value FROM json_each(?))',
          )
          .all(JSON.stringify(missing)),
      );
    }
    // Each distinct word is mapped once to the index of the query term its stem is (-1: none);
    // words not stemmed yet are counted after one batched stemming call.
    const termOfWord = new Map<string, number>();
    const pending: { row: number; word: string; w: number }[] = [];
    const freq = new Float64Array(texts.length * terms.length);
    const lengths = new Float64Array(texts.length);
    const count = (text: string, row: number, w: number): void => {
      const words = wordsOf(text);
      lengths[row] += words.length;
      for (const word of words) {
        let i = termOfWord.get(word);
        if (i === undefined) {
          const stem = this.stemCache.get(word);
          if (stem === undefined) {
            pending.push({ row, word, w });
            continue;
          }
          i = termOf.get(stem) ?? -1;
          termOfWord.set(word, i);
        }
        if (i >= 0) freq[row * terms.length + i] += w;
      }
    };
    texts.forEach((r, row) => {
      count(r.document_title, row, titleWeight);
      count(r.content, row, 1);
    });
    if (pending.length > 0) {
      const words = [...new Set(pending.map((p) => p.word))];
      this.stems(words).forEach((stem, i) => termOfWord.set(words[i], termOf.get(stem) ?? -1));
      for (const p of pending) {
        const i = termOfWord.get(p.word)!;
        if (i >= 0) freq[p.row * terms.length + i] += p.w;
      }
    }
    return texts.map((r, row) => {
      const norm = BM25_K1 * (1 - BM25_B + (BM25_B * lengths[row]) / avgLength);
      let s = 0;
      for (let i = 0; i < terms.length; i++) {
        const f = freq[row * terms.length + i];
        if (f > 0) s += weight[i] * idf[i] * ((f * (BM25_K1 + 1)) / (f + norm));
      }
      return { id: r.id, s };
    });
  }

  /** FTS5's row count and average row length in tokens (its "averages" record). */
  private averages(): { rows: number; avgLength: number } {
    const rec = this.statement<[], { block: Buffer }>('SELECT block FROM chunks_fts_data WHERE id = 1').get();
    if (!rec) return { rows: Math.max(1, this.liveCount), avgLength: 1 };
    const values: number[] = [];
    let i = 0;
    while (i < rec.block.length) {
      // SQLite varint: big-endian 7-bit groups, the ninth byte carries 8 bits.
      let v = 0;
      for (let j = 0; j < 9 && i < rec.block.length; j++) {
        const byte = rec.block[i++];
        if (j === 8) {
          v = v * 256 + byte;
          break;
        }
        v = v * 128 + (byte & 0x7f);
        if ((byte & 0x80) === 0) break;
      }
      values.push(v);
    }
    const rows = Math.max(1, values[0] ?? 1);
    const tokens = values.slice(1).reduce((a, b) => a + b, 0);
    return { rows, avgLength: Math.max(1e-9, tokens / rows) };
  }

  /** BM25 with the filters applied in SQL (small scopes); m < 0: no limit. */
  private lexicalJoin(match: string, filters: SearchFilters, m: number, titleWeight: number, lo: number, hi: number): { id: number; s: number }[] {
    const where: string[] = ['chunks_fts MATCH ?', 'chunks_fts.rowid BETWEEN ? AND ?', 'c.workspace_id = ?'];
    const params: (string | number)[] = [match, lo, hi, filters.workspaceId];
    if (filters.purpose) {
      where.push('c.purpose = ?');
      params.push(filters.purpose);
    }
    if (filters.documentIds) {
      where.push('c.document_id IN (SELECT value FROM json_each(?))');
      params.push(JSON.stringify(filters.documentIds));
    }
    if (filters.tags) {
      where.push('EXISTS (SELECT 1 FROM json_each(c.tags) t WHERE t.value IN (SELECT value FROM json_each(?)))');
      params.push(JSON.stringify(filters.tags));
    }
    params.push(m);
    return this.statement<(string | number)[], { id: number; s: number }>(
        `SELECT c.id AS id, bm25(chunks_fts, ${titleWeight}, 1.0) AS s
         FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
         WHERE ${where.join(' AND ')} ORDER BY s LIMIT ?`,
      )
      .all(...params);
  }

  private readonly stemCache = new Map<string, string>();

  /** Porter stems of words (FTS5's own tokenizer), cached; '' for a word with no token. */
  private stems(words: string[]): string[] {
    const missing = [...new Set(words.filter((w) => !this.stemCache.has(w)))];
    if (missing.length > 0) {
      if (this.stemCache.size + missing.length > STEM_CACHE_LIMIT) this.stemCache.clear();
      this.db.transaction(() => {
        const ins = this.statement('INSERT INTO temp.query_tokens(rowid, t) VALUES (?, ?)');
        missing.forEach((w, i) => ins.run(i + 1, w));
        const found = this.statement<[], { term: string; doc: number }>('SELECT term, doc FROM temp.query_instances WHERE "offset" = 0')
          .all();
        for (const w of missing) this.stemCache.set(w, '');
        for (const f of found) this.stemCache.set(missing[f.doc - 1], f.term);
        this.statement('DELETE FROM temp.query_tokens').run();
      })();
    }
    return words.map((w) => this.stemCache.get(w) ?? '');
  }

  private readonly dfCache = new Map<string, number>();
  /** Chunk writes (added, removed, retitled) so far, and when the cache was started. */
  private writes = 0;
  private dfCacheWrites = -Infinity;

  /**
   * Number of chunks containing each stem. fts5vocab counts by reading the term's whole
   * posting list, so counts are cached until chunk writes reach 1 % of the index.
   */
  private docFrequencies(stems: string[]): Map<string, number> {
    if (this.writes - this.dfCacheWrites > this.liveCount * 0.01 || this.dfCache.size > STEM_CACHE_LIMIT) {
      this.dfCache.clear();
      this.dfCacheWrites = this.writes;
    }
    const missing = [...new Set(stems.filter((t) => !this.dfCache.has(t)))];
    if (missing.length > 0) {
      const rows = this.statement<[string], { term: string; doc: number }>('SELECT term, doc FROM chunks_vocab WHERE term IN (SELECT value FROM json_each(?))')
        .all(JSON.stringify(missing));
      for (const t of missing) this.dfCache.set(t, 0);
      for (const r of rows) this.dfCache.set(r.term, r.doc);
    }
    const out = new Map<string, number>();
    for (const t of stems) {
      const df = this.dfCache.get(t)!;
      if (df > 0) out.set(t, df);
    }
    return out;
  }

  /** The query's own terms, weight 1 each (merged by stem). */
  private originalTerms(text: string): WeightedTerm[] {
    const words = queryTerms(text);
    const stems = this.stems(words);
    const out = new Map<string, WeightedTerm>();
    words.forEach((w, i) => {
      const stem = stems[i];
      if (stem && !out.has(stem)) out.set(stem, { text: w, stem, weight: 1, original: true });
    });
    return [...out.values()];
  }

  /**
   * RM3: the feedback model P(t|R) = Σ_D P(D) · tf(t, D)/|D| over the feedback chunks
   * (P(D) proportional to the first-pass score), keeping the `terms` most likely terms
   * that are not stopwords, numbers or in more than `maxDocFrequency` of the chunks; the
   * query becomes λ·P(t|Q) + (1 − λ)·P(t|R), scaled so that original terms weigh 1.
   */
  private expandTerms(original: WeightedTerm[], feedback: { text: string; weight: number }[]): WeightedTerm[] {
    const prf = this.cfg.prf;
    const totalWeight = feedback.reduce((a, f) => a + f.weight, 0);
    if (original.length === 0 || prf.terms <= 0 || totalWeight <= 0) return original;
    const model = new Map<string, { p: number; text: string }>();
    const surfaceModel = new Map<string, number>();
    for (const f of feedback) {
      const tokens = (f.text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((t) => t.length <= 64);
      if (tokens.length === 0) continue;
      const pd = f.weight / totalWeight / tokens.length;
      for (const t of tokens) {
        if (t.length < 2 || STOPWORDS.has(t) || /^\p{N}+$/u.test(t)) continue;
        surfaceModel.set(t, (surfaceModel.get(t) ?? 0) + pd);
      }
    }
    const words = [...surfaceModel.keys()];
    const stems = this.stems(words);
    words.forEach((w, i) => {
      const stem = stems[i];
      if (!stem) return;
      const e = model.get(stem);
      const p = surfaceModel.get(w)!;
      if (e) e.p += p;
      else model.set(stem, { p, text: w });
    });
    const ranked = [...model.entries()].sort((a, b) => b[1].p - a[1].p || (a[0] < b[0] ? -1 : 1)).slice(0, prf.terms * 4);
    const df = this.docFrequencies(ranked.map(([stem]) => stem));
    const n = Math.max(1, this.liveCount);
    const chosen = ranked.filter(([stem]) => (df.get(stem) ?? 0) / n <= prf.maxDocFrequency).slice(0, prf.terms);
    const mass = chosen.reduce((a, [, e]) => a + e.p, 0);
    if (mass <= 0) return original;
    const lambda = Math.min(1, Math.max(1e-6, prf.originalWeight));
    // Weights relative to an original term (λ/|Q| ↦ 1).
    const scale = original.length / lambda;
    const out = new Map(original.map((t) => [t.stem, { ...t }]));
    for (const [stem, e] of chosen) {
      const w = ((1 - lambda) * e.p) / mass * scale;
      const t = out.get(stem);
      if (t) t.weight += w;
      else out.set(stem, { text: e.text, stem, weight: w, original: false });
    }
    return [...out.values()];
  }

  /**
   * Upper bound of FTS5's BM25 for these terms, Σ w·idf·(k1 + 1): each term's contribution
   * idf·tf·(k1 + 1)/(tf + k1·(1 − b + b·len/avg)) stays below idf·(k1 + 1) whatever the
   * (column-weighted) frequency tf. IDF uses FTS5's formula over all indexed chunks.
   */
  private maxBm25(terms: WeightedTerm[]): number {
    const df = this.docFrequencies(terms.map((t) => t.stem));
    const n = Math.max(1, this.liveCount);
    let sum = 0;
    for (const t of terms) {
      const doc = df.get(t.stem);
      if (doc === undefined) continue;
      const idf = Math.log((n - doc + 0.5) / (doc + 0.5));
      sum += t.weight * Math.max(idf, 1e-6);
    }
    return sum * (BM25_K1 + 1);
  }

  /** One retrieval pass: candidates of both legs, their rows, exact cosines, fused ranking. */
  private retrieve(
    terms: WeightedTerm[],
    query: Float32Array | undefined,
    mode: RankMode,
    filters: SearchFilters,
    scope: Scope,
    k: number,
    denseIds?: number[],
    lexicalPool?: number[],
    poolFactor = 1,
    known?: Map<number, ChunkRow>,
  ): { fused: Fused<number>[]; byId: Map<number, ChunkRow>; denseIds: number[]; lexicalIds: number[] } {
    const m = Math.max(k, this.cfg.candidates);
    const candidates = new Map<number, Candidate<number>>();
    let lexicalIds: number[] = [];
    if (mode !== 'dense') {
      // Without a dense leg, the strongest expansion terms' own hits are the only new candidates.
      const newTerms = mode === 'bm25' ? this.cfg.prf.newTermQuery : 0;
      const deep = this.lexicalCandidates(terms, filters, scope, Math.ceil(m * poolFactor), lexicalPool, known, newTerms);
      lexicalIds = deep.map((r) => r.id);
      const lex = deep.slice(0, m);
      lex.forEach((r, rank) => candidates.set(r.id, { key: r.id, lexical: r.lexical, lexicalRank: rank }));
    }
    if (mode !== 'bm25' && query) {
      denseIds ??= this.denseCandidates(query, scope, m);
      denseIds.forEach((id, rank) => {
        const c = candidates.get(id);
        if (c) c.denseRank = rank;
        else candidates.set(id, { key: id, denseRank: rank });
      });
    }
    if (candidates.size === 0) return { fused: [], byId: new Map(), denseIds: denseIds ?? [], lexicalIds };
    const byId = new Map<number, ChunkRow>();
    const ids: number[] = [];
    for (const id of candidates.keys()) {
      const r = known?.get(id);
      if (r) byId.set(id, r);
      else ids.push(id);
    }
    if (ids.length > 0) {
      const rows = this.statement<[string], ChunkRow>('SELECT * FROM chunks WHERE id IN (SELECT value FROM json_each(?))')
        .all(JSON.stringify(ids));
      for (const r of rows) byId.set(r.id, r);
    }
    if (query) {
      for (const c of candidates.values()) {
        const v = byId.get(c.key)?.vector;
        c.cosine = v ? dotBuffer(query, v) : 0;
      }
    }
    return { fused: fuse([...candidates.values()], k, mode, this.cfg), byId, denseIds: denseIds ?? [], lexicalIds };
  }

  async search(request: SearchRequest): Promise<SearchHit[]> {
    this.assertOpen();
    const k = Math.max(0, Math.floor(request.k));
    if (k === 0) return [];
    const scope = this.docScope(request.filters);
    if (!scope) return [];
    const query = request.vector && request.vector.length > 0 && this.dims > 0 ? unitVector(request.vector) : undefined;
    if (query && query.length !== this.dims) throw new Error(`query vector has ${query.length} dimensions, index has ${this.dims}`);
    // Without a query vector every mode degrades to BM25.
    const mode = !query ? 'bm25' : (request.mode ?? 'hybrid');
    const terms = mode === 'dense' ? [] : this.originalTerms(request.text ?? '');

    const prf = this.cfg.prf;
    const lexicalFeedback = mode !== 'dense' && prf.docs > 0 && prf.terms > 0 && terms.length > 0;
    // With lexical feedback the first BM25 pass reads deeper: those rows are the pool the
    // expanded query re-ranks.
    const first = this.retrieve(terms, query, mode, request.filters, scope, k, undefined, undefined, lexicalFeedback ? Math.max(1, prf.poolDepth) : 1);
    let { fused, byId } = first;
    const denseFeedback = mode !== 'bm25' && query !== undefined && prf.denseWeight > 0;
    if (prf.docs > 0 && fused.length > 0 && (lexicalFeedback || denseFeedback)) {
      // Pseudo-relevance feedback: the first pass's top chunks expand the query, then a second pass.
      const top = fused.slice(0, prf.docs).filter((f) => f.score > 0 && byId.has(f.key));
      if (top.length > 0) {
        const expanded = lexicalFeedback
          ? this.expandTerms(terms, top.map((f) => ({ text: `${byId.get(f.key)!.document_title} ${byId.get(f.key)!.content}`, weight: f.score })))
          : terms;
        const q2 = denseFeedback ? rocchio(query!, top.map((f) => byId.get(f.key)!.vector), prf.denseWeight) : query;
        // The dense leg is re-run only when its query changed.
        // A pool depth below 1 re-ranks only the head of the first pass's BM25 list.
        const pool = first.lexicalIds.slice(0, Math.max(k, Math.ceil(Math.max(k, this.cfg.candidates) * prf.poolDepth)));
        ({ fused, byId } = this.retrieve(expanded, q2, mode, request.filters, scope, k, q2 === query ? first.denseIds : undefined, pool, 1, first.byId));
      }
    }

    const hits: SearchHit[] = [];
    for (const f of fused) {
      const r = byId.get(f.key);
      if (!r) continue;
      const hit: SearchHit = {
        documentId: r.document_id,
        documentTitle: r.document_title,
        content: r.content,
        chunkIndex: r.chunk_index,
        score: f.score,
        tags: JSON.parse(r.tags) as string[],
        purpose: r.purpose,
      };
      if (r.page !== null) hit.page = r.page;
      if (r.section !== null) hit.section = r.section;
      hits.push(hit);
    }
    return hits;
  }

  /** Approximate in-memory footprint of the dense side, for benchmarks. */
  stats(): { chunks: number; dims: number; vectorBytes: number } {
    return { chunks: this.liveCount, dims: this.dims, vectorBytes: this.memory?.buffer.byteLength ?? 0 };
  }
}

/** Rocchio: the unit query plus `beta` times the mean of the feedback vectors, normalised. */
function rocchio(query: Float32Array, vectors: (Buffer | null)[], beta: number): Float32Array {
  const usable = vectors.filter((v): v is Buffer => v !== null);
  if (usable.length === 0) return query;
  const out = Float32Array.from(query);
  const w = beta / usable.length;
  for (const b of usable) {
    const v = bufferToFloats(b);
    for (let i = 0; i < Math.min(out.length, v.length); i++) out[i] += w * v[i];
  }
  return unitVector(out);
}

function bufferToFloats(b: Buffer): Float32Array {
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new Float32Array(copy.buffer, 0, b.byteLength >> 2);
}

/** Cosines already computed for a query vector (the feedback pass reuses the first pass's). */
const cosineCache = new WeakMap<Float32Array, Map<Buffer, number>>();

function dotBuffer(q: Float32Array, b: Buffer): number {
  let cache = cosineCache.get(q);
  if (!cache) cosineCache.set(q, (cache = new Map()));
  const known = cache.get(b);
  if (known !== undefined) return known;
  // A view when the blob is 4-byte aligned, else a copy.
  const v = b.byteOffset % 4 === 0 ? new Float32Array(b.buffer, b.byteOffset, b.byteLength >> 2) : bufferToFloats(b);
  const n = Math.min(q.length, v.length);
  let s = 0;
  for (let i = 0; i < n; i++) s += q[i] * v[i];
  cache.set(b, s);
  return s;
}
