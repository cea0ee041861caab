import fs from 'node:fs';
import type Database from 'better-sqlite3';
import {
  type ChunkVector,
  type DocumentFields,
  type IndexedChunk,
  type Purpose,
  type SearchFilters,
  type SearchHit,
  type SearchIndex,
  type SearchRequest,
  type VectorModel,
  type VectorModels,
  VectorModelChangedError,
} from '../../ports/searchIndex';
import { type Candidate, type Fused, type HybridConfig, type HybridOverrides, type RankMode, calibratedScoreOf, fuse, resolveHybridConfig } from '../../search/hybrid';
import { rocchio } from '../../search/queryFeedback';
import type { WeightedTerm } from '../../search/textAnalysis';
import { unitVector } from '../../search/unitVector';
import { type DocInfo, DocumentCatalog, PURPOSE_CODE, type Scope } from './documentCatalog';
import { LexicalIndex } from './lexicalIndex';
import { LexicalRanker } from './lexicalRanker';
import { type AnnSettings, DEFAULT_ANN, readIvf, writeIvf } from './ivfIndex';
import { internVectorModel, metaModel, openIndexDatabase, RowIds, SCHEMA_VERSION, storedDims, WS_SPAN } from './schema';
import { StatementCache } from './statements';
import { Stemmer } from './stemmer';
import { bufferToFloats, dotBuffer, VectorSlab } from './vectorSlab';

// Text analysis used to live here; importers of these keep working.
export { queryTerms, toMatchExpression } from '../../search/textAnalysis';

export interface EmbeddedSearchIndexOptions {
  hybrid?: HybridOverrides;
  /** The approximate dense search (ivfIndex.ts); by default above 20,000 chunks. */
  ann?: Partial<AnnSettings>;
}

/** A chunk's id and stored vector (what the exact re-scoring reads). */
type VectorRow = Pick<ChunkRow, 'id' | 'vector'>;

/** Rows read per query while loading. */
const LOAD_PAGE = 4096;

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

/** A model as the file numbers it (vector_models). */
interface NumberedModel extends VectorModel {
  num: number;
}

/**
 * Embedded SearchIndex: one SQLite file (WAL) with an FTS5 table for BM25 and a chunk
 * table holding metadata and float32 vectors; the vectors are also held in memory as
 * int8 (per-vector scale) in WebAssembly memory, scanned with SIMD for dense kNN, and
 * the top candidates are re-scored exactly from the stored float32 vectors. Above 20,000
 * chunks an inverted-file index over the int8 vectors (ivfIndex.ts) lets a search over a
 * large scope scan only the members of its nearest lists; it is written beside the file on a
 * clean close (`<file>.ivf`, stamped like the lexical snapshot) and trained again otherwise.
 *
 * This class coordinates: the file's tables and row-id layout (schema.ts), the documents
 * and filter scopes (documentCatalog.ts), the int8 vectors (vectorSlab.ts), BM25 with
 * feedback (lexicalRanker.ts, stemmer.ts, src/search/queryFeedback.ts) and the fusion of
 * both legs (src/search/hybrid.ts).
 */
export class EmbeddedSearchIndex implements SearchIndex {
  private readonly db: Database.Database;
  private readonly statements: StatementCache;
  private readonly rowIds: RowIds;
  private readonly catalog: DocumentCatalog;
  private ann: AnnSettings;
  private slab: VectorSlab;
  /**
   * During a model change: every chunk row with its next-model vector (or none), built as the
   * vectors arrive, so the switch only swaps it in (memory: a second int8 copy meanwhile).
   */
  private nextSlab: VectorSlab | undefined;
  private readonly lexical: LexicalRanker;
  private readonly lexicalIndex: LexicalIndex;
  /** Fusion's cosines from the int8 copies with error bounds (`tuneCosines`). */
  private boundedCosines = true;
  private cfg: HybridConfig;
  private closed = false;
  /** Where the lexical index's snapshot is kept (none for an in-memory database). */
  private readonly snapshotFile: string | undefined;
  /** Write transactions committed to the file so far (stamps the lexical snapshot). */
  private generation: number;
  private lexicalFrom: 'snapshot' | 'caught-up' | 'text' = 'text';
  /** Where the approximate dense index is kept (`<file>.ivf`). */
  private readonly ivfFile: string | undefined;
  /** Transactions that changed stored vectors in place (putVectors, a model switch): stamps the IVF file. */
  private vectorGeneration: number;
  /** The model of the vectors searches use (meta `model`), and the one being built beside it (`next_model`). */
  private active: NumberedModel | undefined;
  private next: NumberedModel | undefined;
  /** Documents with vectors of the next model. */
  private readonly nextDocs = new Set<string>();

  constructor(filePath: string, options: EmbeddedSearchIndexOptions = {}) {
    this.cfg = resolveHybridConfig(options.hybrid);
    this.ann = { ...DEFAULT_ANN, ...options.ann };
    this.slab = new VectorSlab(this.ann);
    this.db = openIndexDatabase(filePath);
    this.statements = new StatementCache(this.db);
    this.rowIds = new RowIds(this.db);
    this.catalog = new DocumentCatalog((workspaceId) => this.rowIds.workspaceNumber(workspaceId));
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;
    // The ranker reads whichever slab is current (a model switch replaces it).
    const corpus = {
      get liveCount(): number {
        return self.slab.liveCount;
      },
      get dims(): number {
        return self.slab.dims;
      },
      get writes(): number {
        return self.slab.writes;
      },
      inScope: (rowId: number, mask: Uint8Array): boolean => self.slab.inScope(rowId, mask),
    };
    const stemmer = new Stemmer(this.statements);
    this.lexicalIndex = new LexicalIndex((words) => stemmer.stems(words));
    this.lexical = new LexicalRanker(this.statements, stemmer, corpus, this.lexicalIndex);
    const dims = storedDims(this.db);
    if (dims !== undefined) this.slab.setDims(dims);
    this.generation = Number(this.db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'generation'").get()?.value ?? 0);
    this.vectorGeneration = Number(this.db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'vector_generation'").get()?.value ?? 0);
    this.snapshotFile = filePath === ':memory:' || filePath === '' ? undefined : `${filePath}.lexical`;
    this.ivfFile = filePath === ':memory:' || filePath === '' ? undefined : `${filePath}.ivf`;
    // The lexical index: from its snapshot when it is of this generation; after a crash that
    // followed writes, from the older snapshot caught up with the rows written since; else
    // from the chunks' text.
    const read = this.snapshotFile !== undefined && this.lexicalIndex.readSnapshot(this.snapshotFile, this.stamp(), true);
    const exact = read && this.lexicalIndex.snapshotGeneration === this.generation;
    const older = read && !exact;
    this.slab.beginBulk();
    const bound = this.load(exact ? 'snapshot' : older ? 'older-snapshot' : 'text');
    if (!bound) {
      // The snapshot did not hold exactly the rows of the file: rebuild from their text.
      this.lexicalIndex.clear();
      this.loadText();
    }
    // (A caught-up index writes its snapshot at the next clean close; until then another crash catches up from the same one.)
    this.lexicalFrom = !bound ? 'text' : exact ? 'snapshot' : older ? 'caught-up' : 'text';
    this.active = metaModel(this.db, 'model');
    this.next = metaModel(this.db, 'next_model');
    // The approximate dense index: from its file when that names exactly these rows and vectors, else trained.
    // After a crash that followed writes, the older file is caught up (vectors unchanged since: the stamp's vector generation).
    const saved = this.ivfFile !== undefined ? readIvf(this.ivfFile, this.ivfStamp(), true) : undefined;
    if (saved && saved.generation === this.generation) this.slab.restoreIndex(saved);
    else if (saved) this.slab.restoreIndex(saved, this.rowsSetAfter(saved.generation));
    this.slab.endBulk();
    if (this.next) {
      for (const r of this.db.prepare<[], { d: string }>('SELECT DISTINCT document_id AS d FROM next_vectors').iterate()) this.nextDocs.add(r.d);
      this.nextSlab = this.buildNextSlab(this.next.dimensions);
    }
  }

  /** Rows whose text and vector were set after a write generation (`chunks.lexgen`). */
  private rowsSetAfter(generation: number): Set<number> {
    return new Set(this.db.prepare<[number], number>('SELECT id FROM chunks WHERE lexgen > ?').pluck().all(generation));
  }

  private stamp(): { generation: number; schema: string } {
    return { generation: this.generation, schema: SCHEMA_VERSION };
  }

  private ivfStamp(): { generation: number; vectorGeneration: number; schema: string; model: string; dims: number } {
    return {
      generation: this.generation,
      vectorGeneration: this.vectorGeneration,
      schema: SCHEMA_VERSION,
      model: this.active ? `${this.active.num}:${this.active.modelId}` : '',
      dims: this.slab.dims,
    };
  }

  /** Counts a transaction that changes stored vectors in place (call inside it): an IVF file of an older count is stale. */
  private bumpVectorGeneration(): void {
    this.vectorGeneration++;
    this.statements.get("INSERT OR REPLACE INTO meta(key, value) VALUES ('vector_generation', ?)").run(String(this.vectorGeneration));
  }

  /** Changes the approximate dense search's settings (benchmarks and the evaluation compare them). */
  configureAnn(ann: Partial<AnnSettings>): void {
    this.ann = { ...this.ann, ...ann };
    this.slab.configureAnn(this.ann);
    this.nextSlab?.configureAnn(this.ann);
  }

  /** Current settings of the approximate dense search. */
  get annSettings(): AnnSettings {
    return this.ann;
  }

  /** Counts a write transaction (call inside it): a lexical snapshot of an older count is stale. */
  private bumpGeneration(): void {
    this.generation++;
    this.statements.get("INSERT OR REPLACE INTO meta(key, value) VALUES ('generation', ?)").run(String(this.generation));
  }

  /** Every chunk row with its next-model vector, if it has one. */
  private buildNextSlab(dims: number): VectorSlab {
    const slab = new VectorSlab(this.ann);
    slab.setDims(dims);
    slab.beginBulk();
    const rows = this.db
      .prepare<[], { id: number; document_id: string; vector: Buffer | null }>(
        `SELECT c.id AS id, c.document_id AS document_id, n.vector AS vector FROM chunks c
         LEFT JOIN next_vectors n ON n.document_id = c.document_id AND n.chunk_index = c.chunk_index ORDER BY c.id`,
      )
      .iterate();
    for (const r of rows) slab.add(r.id, this.catalog.intern(r.document_id), r.vector ? bufferToFloats(r.vector) : null);
    slab.endBulk();
    return slab;
  }

  /** Sets a document's rows in the next slab again from the file (after an upsert or new next vectors). */
  private refreshNextSlab(documentId: string): void {
    const slab = this.nextSlab;
    if (!slab) return;
    const doc = this.catalog.intern(documentId);
    const rows = this.statements
      .get<[string], { id: number; vector: Buffer | null }>(
        `SELECT c.id AS id, n.vector AS vector FROM chunks c
         LEFT JOIN next_vectors n ON n.document_id = c.document_id AND n.chunk_index = c.chunk_index WHERE c.document_id = ? ORDER BY c.id`,
      )
      .all(documentId);
    for (const r of rows) slab.remove(r.id);
    slab.dropDoc(doc);
    for (const r of rows) slab.add(r.id, doc, r.vector ? bufferToFloats(r.vector) : null);
  }

  /** Current ranking configuration. */
  get hybridConfig(): HybridConfig {
    return this.cfg;
  }

  /** Changes the ranking configuration (used by the evaluation to compare settings). */
  configure(hybrid: HybridOverrides): void {
    this.cfg = resolveHybridConfig({ ...this.cfg, ...hybrid, dense: { ...this.cfg.dense, ...hybrid.dense }, prf: { ...this.cfg.prf, ...hybrid.prf } });
  }

  /**
   * How the lexical leg computes (benchmarks compare both ways; the results are the same):
   * `pruneMinPostings`, the query postings from which BM25 is ranked with pruning (Infinity:
   * never); `feedbackFromText`, re-score the feedback pass from the chunks' text as before
   * instead of from the postings.
   */
  tuneLexical(options: { pruneMinPostings?: number; feedbackFromText?: boolean }): void {
    if (options.pruneMinPostings !== undefined) this.lexicalIndex.pruneMinPostings = options.pruneMinPostings;
    if (options.feedbackFromText !== undefined) this.lexical.feedbackFromText = options.feedbackFromText;
  }

  /**
   * How fusion gets its cosines (benchmarks and tests compare both ways; the results are the
   * same): `bounded`, from the int8 copies with error bounds, reading the float vectors of the
   * candidates that could reach the top k only; otherwise the float vectors of every candidate.
   */
  tuneCosines(options: { bounded: boolean }): void {
    this.boundedCosines = options.bounded;
  }

  /** What the pruned BM25 searches did so far (searches, those cut off, postings read of all). */
  get lexicalPruning(): Readonly<{ searches: number; cutOff: number; postingsRead: number; postingsTotal: number }> {
    return { ...this.lexicalIndex.pruning };
  }

  /**
   * Loads the in-memory side from the chunks table: documents, int8 vectors and, unless a
   * snapshot of the lexical index was read (`withSnapshot`: the rows are bound to it), the
   * lexical index from the chunks' text. Read in pages of rows (the lexical index stems new
   * words through the same connection, which an open iterator would hold busy). Returns false
   * when the snapshot did not hold exactly these rows.
   */
  private load(lexical: 'snapshot' | 'older-snapshot' | 'text'): boolean {
    const withSnapshot = lexical !== 'text';
    const columns = `id, workspace_id, document_id, purpose, tags, vector, lexgen${withSnapshot ? '' : ', document_title, content'}`;
    const page = this.db.prepare<[number, number], Pick<ChunkRow, 'id' | 'workspace_id' | 'document_id' | 'purpose' | 'tags' | 'vector' | 'document_title' | 'content'> & { lexgen: number }>(
      `SELECT ${columns} FROM chunks WHERE id > ? ORDER BY id LIMIT ?`,
    );
    // Catching an older snapshot up: rows whose text was set after it are indexed from their text.
    const since = lexical === 'older-snapshot' ? this.lexicalIndex.snapshotGeneration : Infinity;
    const fresh: number[] = [];
    let bound = true;
    let after = -Infinity;
    for (;;) {
      const rows = page.all(after, LOAD_PAGE);
      for (const r of rows) {
        const doc = this.catalog.intern(r.document_id);
        const info = this.catalog.info(doc);
        if (info) this.catalog.addChunk(info);
        else
          this.setDoc(doc, {
            workspace: this.rowIds.internWorkspace(r.workspace_id),
            purpose: PURPOSE_CODE[r.purpose],
            tags: JSON.parse(r.tags) as string[],
            chunks: 1,
          });
        const vector = r.vector ? bufferToFloats(r.vector) : null;
        if (vector && this.slab.dims === 0) this.slab.setDims(vector.length);
        this.slab.add(r.id, doc, vector);
        if (!withSnapshot) this.lexicalIndex.add(r.id, workspaceOfRow(r.id), doc, r.document_title, r.content);
        else if (r.lexgen > since) fresh.push(r.id);
        else if (bound) bound = this.lexicalIndex.bind(r.id, workspaceOfRow(r.id), doc);
      }
      if (rows.length < LOAD_PAGE) break;
      after = rows[rows.length - 1].id;
    }
    if (lexical !== 'older-snapshot') return !withSnapshot || (bound && this.lexicalIndex.complete);
    // Every row older than the snapshot must be in it; what it holds beyond them was deleted or set again since.
    if (!bound) return false;
    this.lexicalIndex.dropUnbound();
    const text = this.db.prepare<[number], Pick<ChunkRow, 'document_id' | 'document_title' | 'content'>>('SELECT document_id, document_title, content FROM chunks WHERE id = ?');
    for (const id of fresh) {
      const r = text.get(id)!;
      this.lexicalIndex.add(id, workspaceOfRow(id), this.catalog.intern(r.document_id), r.document_title, r.content);
    }
    return true;
  }

  /** Builds the lexical index from the chunks' text (documents already loaded). */
  private loadText(): void {
    const page = this.db.prepare<[number, number], Pick<ChunkRow, 'id' | 'document_id' | 'document_title' | 'content'>>(
      'SELECT id, document_id, document_title, content FROM chunks WHERE id > ? ORDER BY id LIMIT ?',
    );
    let after = -Infinity;
    for (;;) {
      const rows = page.all(after, LOAD_PAGE);
      for (const r of rows) this.lexicalIndex.add(r.id, workspaceOfRow(r.id), this.catalog.intern(r.document_id), r.document_title, r.content);
      if (rows.length < LOAD_PAGE) break;
      after = rows[rows.length - 1].id;
    }
  }

  private setDoc(doc: number, info: DocInfo): void {
    this.catalog.set(doc, info);
    this.slab.dropDoc(doc);
  }

  /** The first vector fixes the model and its dimensions: recorded in the file, rows held so far get slots. */
  private fixModel(model: VectorModel): NumberedModel {
    const num = internVectorModel(this.db, model);
    this.statements.get("INSERT OR REPLACE INTO meta(key, value) VALUES ('model', ?)").run(String(num));
    this.statements.get("INSERT OR REPLACE INTO meta(key, value) VALUES ('dims', ?)").run(String(model.dimensions));
    if (this.slab.dims === 0) this.slab.fixDims(model.dimensions);
    else if (this.slab.dims !== model.dimensions) this.reloadVectors(model.dimensions);
    this.active = { num, modelId: model.modelId, dimensions: model.dimensions };
    return this.active;
  }

  /** Fills the in-memory vectors again from the chunk rows (after a model switch). */
  private reloadVectors(dims: number): void {
    this.slab.clear();
    this.slab.setDims(dims);
    this.slab.beginBulk();
    const rows = this.db.prepare<[], { id: number; document_id: string; vector: Buffer | null }>('SELECT id, document_id, vector FROM chunks ORDER BY id').iterate();
    for (const r of rows) this.slab.add(r.id, this.catalog.intern(r.document_id), r.vector ? bufferToFloats(r.vector) : null);
    this.slab.endBulk();
  }

  // ---------------------------------------------------------------- writes

  async upsertDocument(documentId: string, chunks: IndexedChunk[]): Promise<void> {
    await this.upsertDocuments([{ documentId, chunks }]);
  }

  /**
   * Replaces the chunks of several documents in one transaction (bulk loads: one commit
   * instead of one per document). Each entry behaves as `upsertDocument`.
   */
  async upsertDocuments(batch: { documentId: string; chunks: IndexedChunk[] }[]): Promise<void> {
    this.assertOpen();
    const prepared = batch.map(({ documentId, chunks }) =>
      chunks.map((c) => {
        if (c.documentId !== documentId) throw new Error(`chunk of ${c.documentId} upserted as ${documentId}`);
        const v = c.vector.length > 0 ? unitVector(c.vector) : null;
        const next = c.next && c.next.vector.length > 0 && c.next.model === this.next?.modelId ? unitVector(c.next.vector) : null;
        return { c, v, next };
      }),
    );
    const flat = prepared.flat();
    const withVector = flat.find((p) => p.v);
    if (withVector?.v && !this.active) this.fixModel({ modelId: withVector.c.model ?? `unnamed:${withVector.v.length}d`, dimensions: withVector.v.length });
    const active = this.active;
    for (const p of flat) {
      if (!p.v || !active) continue;
      if (p.c.model !== undefined && p.c.model !== active.modelId) throw new Error(`a vector of ${p.c.model} upserted into an index of ${active.modelId}`);
      if (p.v.length !== this.slab.dims) throw new Error(`vector has ${p.v.length} dimensions, index has ${this.slab.dims}`);
    }
    const nextModel = this.next;
    for (const p of flat) if (p.next && nextModel && p.next.length !== nextModel.dimensions) throw new Error(`vector has ${p.next.length} dimensions, ${nextModel.modelId} has ${nextModel.dimensions}`);
    const insert = this.statements.get(
      `INSERT INTO chunks (id, workspace_id, document_id, document_title, purpose, tags, chunk_index, content, page, section, vector, model, lexgen)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const insertNext = this.statements.get('INSERT OR REPLACE INTO next_vectors(document_id, chunk_index, model, vector) VALUES (?, ?, ?, ?)');
    const wsOf = new Map<string, number>();
    for (const { chunks } of batch) for (const c of chunks) if (!wsOf.has(c.workspaceId)) wsOf.set(c.workspaceId, this.rowIds.internWorkspace(c.workspaceId));
    const insertFts = this.statements.get('INSERT INTO chunks_fts(rowid, title, content) VALUES (?, ?, ?)');
    const tx = this.db.transaction(() => {
      this.bumpGeneration();
      return batch.map(({ documentId }, i) => {
        this.deleteRows(documentId);
        const added: { id: number; v: Float32Array | null; title: string; content: string }[] = [];
        for (const { c, v, next } of prepared[i]) {
          const info = insert.run(
            this.rowIds.allocateRow(wsOf.get(c.workspaceId)!),
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
            v && active ? active.num : null,
            this.generation,
          );
          if (next && nextModel) insertNext.run(documentId, c.chunkIndex, nextModel.num, Buffer.from(next.buffer, next.byteOffset, next.byteLength));
          const id = Number(info.lastInsertRowid);
          insertFts.run(id, c.documentTitle, c.content);
          added.push({ id, v, title: c.documentTitle, content: c.content });
        }
        return added;
      });
    });
    const addedByDoc = tx();
    batch.forEach(({ documentId, chunks }, i) => {
      if (prepared[i].some((p) => p.next)) this.nextDocs.add(documentId);
      if (chunks.length === 0) return;
      const doc = this.catalog.intern(documentId);
      const first = chunks[0];
      this.setDoc(doc, {
        workspace: this.rowIds.internWorkspace(first.workspaceId),
        purpose: PURPOSE_CODE[first.purpose],
        tags: [...first.tags],
        chunks: chunks.length,
      });
      for (const a of addedByDoc[i]) {
        this.slab.add(a.id, doc, a.v);
        this.lexicalIndex.add(a.id, workspaceOfRow(a.id), doc, a.title, a.content);
      }
      this.refreshNextSlab(documentId);
    });
  }

  /** Deletes a document's rows in SQL and memory; call inside a transaction. */
  private deleteRows(documentId: string): void {
    if (this.nextDocs.delete(documentId)) this.statements.get('DELETE FROM next_vectors WHERE document_id = ?').run(documentId);
    const ids = this.statements.get<[string], { id: number; document_title: string; content: string }>(
      'SELECT id, document_title, content FROM chunks WHERE document_id = ?',
    ).all(documentId);
    if (ids.length === 0) return;
    const delFts = this.statements.get('DELETE FROM chunks_fts WHERE rowid = ?');
    for (const { id, document_title, content } of ids) {
      delFts.run(id);
      this.slab.remove(id);
      this.lexicalIndex.remove(id, workspaceOfRow(id), document_title, content);
      this.nextSlab?.remove(id);
    }
    this.statements.get('DELETE FROM chunks WHERE document_id = ?').run(documentId);
    const d = this.catalog.docId(documentId);
    if (d !== undefined) {
      this.catalog.unset(d);
      this.slab.dropDoc(d);
      this.slab.dropPending(d);
      this.nextSlab?.dropDoc(d);
    }
  }

  async deleteDocument(documentId: string): Promise<void> {
    this.assertOpen();
    this.db.transaction(() => {
      this.bumpGeneration();
      this.deleteRows(documentId);
    })();
  }

  async deleteWorkspace(workspaceId: string): Promise<void> {
    this.assertOpen();
    const docs = this.statements.get<[string], { document_id: string }>('SELECT DISTINCT document_id FROM chunks WHERE workspace_id = ?')
      .all(workspaceId);
    this.db.transaction(() => {
      this.bumpGeneration();
      for (const d of docs) this.deleteRows(d.document_id);
    })();
  }

  async updateDocumentFields(documentId: string, fields: DocumentFields): Promise<void> {
    this.assertOpen();
    const d = this.catalog.docId(documentId);
    const info = d === undefined ? undefined : this.catalog.info(d);
    if (!info) return;
    this.db.transaction(() => {
      this.bumpGeneration();
      if (fields.purpose !== undefined) this.statements.get('UPDATE chunks SET purpose = ? WHERE document_id = ?').run(fields.purpose, documentId);
      if (fields.tags !== undefined) this.statements.get('UPDATE chunks SET tags = ? WHERE document_id = ?').run(JSON.stringify(fields.tags), documentId);
      if (fields.documentTitle !== undefined) {
        const rows = this.statements.get<[string], { id: number; document_title: string; content: string }>(
          'SELECT id, document_title, content FROM chunks WHERE document_id = ?',
        ).all(documentId);
        this.statements.get('UPDATE chunks SET document_title = ?, lexgen = ? WHERE document_id = ?').run(fields.documentTitle, this.generation, documentId);
        const del = this.statements.get('DELETE FROM chunks_fts WHERE rowid = ?');
        const ins = this.statements.get('INSERT INTO chunks_fts(rowid, title, content) VALUES (?, ?, ?)');
        for (const r of rows) {
          del.run(r.id);
          ins.run(r.id, fields.documentTitle, r.content);
          this.lexicalIndex.remove(r.id, workspaceOfRow(r.id), r.document_title, r.content);
          this.lexicalIndex.add(r.id, workspaceOfRow(r.id), d!, fields.documentTitle, r.content);
        }
        // Retitled chunks change the term statistics as much as rewritten ones.
        this.slab.noteWrites(rows.length);
      }
    })();
    this.catalog.update(info, fields);
  }

  async clear(): Promise<void> {
    this.assertOpen();
    this.db.transaction(() => {
      this.db.exec("DELETE FROM chunks; DELETE FROM chunks_fts; DELETE FROM checkpoint; DELETE FROM next_vectors; DELETE FROM meta WHERE key IN ('dims', 'model', 'next_model');");
      this.bumpGeneration();
    })();
    this.active = undefined;
    this.next = undefined;
    this.nextSlab = undefined;
    this.nextDocs.clear();
    this.rowIds.clearRows();
    this.slab.clear();
    this.lexicalIndex.clear();
    this.lexical.clear();
    this.catalog.clear();
  }

  // ---------------------------------------------------------------- embedding models

  async vectorModels(): Promise<VectorModels> {
    this.assertOpen();
    const model = (m: NumberedModel): VectorModel => ({ modelId: m.modelId, dimensions: m.dimensions });
    return {
      ...(this.active ? { active: model(this.active) } : {}),
      ...(this.next ? { next: { ...model(this.next), documents: this.nextDocs.size } } : {}),
      documents: this.catalog.documentCount(),
    };
  }

  async beginVectorModel(model: VectorModel): Promise<void> {
    this.assertOpen();
    if (this.next?.modelId === model.modelId) return;
    this.db.transaction(() => {
      this.statements.get('DELETE FROM next_vectors').run();
      this.nextDocs.clear();
      if (this.active?.modelId === model.modelId) {
        this.statements.get("DELETE FROM meta WHERE key = 'next_model'").run();
        this.next = undefined;
        return;
      }
      const num = internVectorModel(this.db, model);
      this.statements.get("INSERT OR REPLACE INTO meta(key, value) VALUES ('next_model', ?)").run(String(num));
      this.next = { num, ...model };
    })();
    this.nextSlab = this.next ? this.buildNextSlab(this.next.dimensions) : undefined;
  }

  async putVectors(documentId: string, modelId: string, vectors: ChunkVector[]): Promise<void> {
    this.assertOpen();
    const units = vectors.filter((v) => v.vector.length > 0).map((v) => ({ chunkIndex: v.chunkIndex, v: unitVector(v.vector) }));
    if (units.length === 0) return;
    const held = this.statements.get<[string], { n: number }>('SELECT count(*) AS n FROM chunks WHERE document_id = ?').get(documentId)?.n ?? 0;
    if (held === 0) return;
    if (!this.active && this.next?.modelId !== modelId) this.fixModel({ modelId, dimensions: units[0].v.length });
    const target = this.active?.modelId === modelId ? this.active : this.next?.modelId === modelId ? this.next : undefined;
    if (!target) return; // a model neither active nor being built: stale
    for (const u of units) if (u.v.length !== target.dimensions) throw new Error(`vector has ${u.v.length} dimensions, ${modelId} has ${target.dimensions}`);
    const blob = (v: Float32Array): Buffer => Buffer.from(v.buffer, v.byteOffset, v.byteLength);
    if (target === this.next) {
      const put = this.statements.get(
        `INSERT OR REPLACE INTO next_vectors(document_id, chunk_index, model, vector)
         SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM chunks WHERE document_id = ? AND chunk_index = ?)`,
      );
      this.db.transaction(() => {
        for (const u of units) put.run(documentId, u.chunkIndex, target.num, blob(u.v), documentId, u.chunkIndex);
      })();
      this.nextDocs.add(documentId);
      this.refreshNextSlab(documentId);
      return;
    }
    const update = this.statements.get('UPDATE chunks SET vector = ?, model = ? WHERE document_id = ? AND chunk_index = ?');
    const rows = this.db.transaction(() => {
      this.bumpVectorGeneration();
      for (const u of units) update.run(blob(u.v), target.num, documentId, u.chunkIndex);
      return this.statements.get<[string], { id: number; vector: Buffer | null }>('SELECT id, vector FROM chunks WHERE document_id = ? ORDER BY id').all(documentId);
    })();
    const doc = this.catalog.intern(documentId);
    for (const r of rows) this.slab.remove(r.id);
    this.slab.dropDoc(doc);
    for (const r of rows) this.slab.add(r.id, doc, r.vector ? bufferToFloats(r.vector) : null);
  }

  async switchVectorModel(model: VectorModel): Promise<void> {
    this.assertOpen();
    if (this.active?.modelId === model.modelId) return;
    const built = this.next?.modelId === model.modelId;
    const num = internVectorModel(this.db, model);
    this.db.transaction(() => {
      this.bumpVectorGeneration();
      // One statement: each chunk takes its next vector, or none (BM25 only until it gets one).
      if (built) {
        this.statements.get(
          `UPDATE chunks SET (vector, model) = (SELECT n.vector, n.model FROM next_vectors n WHERE n.document_id = chunks.document_id AND n.chunk_index = chunks.chunk_index)`,
        ).run();
      } else {
        this.statements.get('UPDATE chunks SET vector = NULL, model = NULL').run();
      }
      this.statements.get('DELETE FROM next_vectors').run();
      this.statements.get("DELETE FROM meta WHERE key = 'next_model'").run();
      this.statements.get("INSERT OR REPLACE INTO meta(key, value) VALUES ('model', ?)").run(String(num));
      this.statements.get("INSERT OR REPLACE INTO meta(key, value) VALUES ('dims', ?)").run(String(model.dimensions));
    })();
    this.active = { num, ...model };
    this.next = undefined;
    this.nextDocs.clear();
    // The next slab already holds every row with its new vector (or none): swapped in.
    if (built && this.nextSlab) {
      this.nextSlab.noteWrites(this.slab.writes + this.slab.liveCount);
      this.slab = this.nextSlab;
      this.lexical.clear();
    } else {
      this.reloadVectors(model.dimensions);
    }
    this.nextSlab = undefined;
  }

  async dropVectorModel(modelId: string): Promise<void> {
    this.assertOpen();
    if (this.next?.modelId !== modelId) return;
    this.db.transaction(() => {
      this.statements.get('DELETE FROM next_vectors').run();
      this.statements.get("DELETE FROM meta WHERE key = 'next_model'").run();
    })();
    this.next = undefined;
    this.nextSlab = undefined;
    this.nextDocs.clear();
  }

  /**
   * Gives the active vectors of a file that did not record their model (`unknown:<dims>d`,
   * see schema.ts) the name of the model that made them, which the caller knows.
   */
  nameLegacyModel(modelId: string): void {
    const a = this.active;
    if (!a || !a.modelId.startsWith('unknown:') || a.modelId === modelId) return;
    const num = internVectorModel(this.db, { modelId, dimensions: a.dimensions });
    this.db.transaction(() => {
      this.statements.get('UPDATE chunks SET model = ? WHERE model = ?').run(num, a.num);
      this.statements.get("INSERT OR REPLACE INTO meta(key, value) VALUES ('model', ?)").run(String(num));
    })();
    this.active = { num, modelId, dimensions: a.dimensions };
  }

  async getCheckpoint(): Promise<number> {
    this.assertOpen();
    const row = this.statements.get<[], { position: number }>('SELECT position FROM checkpoint WHERE id = 1').get();
    return row ? row.position : 0;
  }

  async setCheckpoint(position: number): Promise<void> {
    this.assertOpen();
    this.statements.get('INSERT INTO checkpoint(id, position) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET position = excluded.position').run(position);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
    // A training under way is dropped: the file gets the index trained before, and the next open trains again if it is due.
    this.slab.stopAnnTraining();
    this.nextSlab?.stopAnnTraining();
    if (this.ivfFile) {
      try {
        const rows = this.slab.indexRows();
        if (rows) writeIvf(this.ivfFile, this.ivfStamp(), rows.ivf, rows);
        else fs.rmSync(this.ivfFile, { force: true });
      } catch {
        // Without the file the next open trains the index again.
      }
    }
    this.writeLexicalSnapshot();
  }

  /** Writes the lexical snapshot of this generation; when that fails, none is left. */
  private writeLexicalSnapshot(): void {
    if (!this.snapshotFile) return;
    try {
      this.lexicalIndex.writeSnapshot(this.snapshotFile, this.stamp());
    } catch {
      // Without a snapshot the next open rebuilds the lexical index from the chunks' text.
      try {
        fs.rmSync(this.snapshotFile, { force: true });
      } catch {
        // (nor can it be removed: the next open catches the older one up)
      }
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('search index is closed');
  }

  // ---------------------------------------------------------------- reads

  async countDocuments(filters: SearchFilters): Promise<number> {
    this.assertOpen();
    const mask = this.catalog.scope(filters)?.mask;
    if (!mask) return 0;
    let n = 0;
    for (let d = 0; d < mask.length; d++) n += mask[d];
    return n;
  }

  /**
   * One retrieval pass: candidates of both legs, their cosines, fused ranking. A cosine is
   * exact wherever it can decide the top `k`: each candidate's cosine is first taken from the
   * slab's int8 copy with a bound of its error, which bounds its fused score; the stored float
   * vectors are read only for the candidates whose score could still reach the top `k` (at
   * least `k` others score surely higher than every one left out), so the answer is the one
   * exact cosines for every candidate give, at a fraction of the reads.
   */
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
    exact: Map<number, number> = new Map(),
  ): { fused: Fused<number>[]; exact: Map<number, number>; denseIds: number[]; lexicalIds: number[] } {
    const m = Math.max(k, this.cfg.candidates);
    const candidates = new Map<number, Candidate<number>>();
    let lexicalIds: number[] = [];
    if (mode !== 'dense') {
      // Without a dense leg, the strongest expansion terms' own hits are the only new candidates.
      const newTerms = mode === 'bm25' ? this.cfg.prf.newTermQuery : 0;
      const titleWeight = Number(this.cfg.titleWeight) || 0;
      const deep = this.lexical.candidates(terms, filters, scope, Math.ceil(m * poolFactor), titleWeight, lexicalPool, undefined, newTerms);
      lexicalIds = deep.map((r) => r.id);
      const lex = deep.slice(0, m);
      lex.forEach((r, rank) => candidates.set(r.id, { key: r.id, lexical: r.lexical, lexicalRank: rank }));
    }
    if (mode !== 'bm25' && query) {
      denseIds ??= this.slab.topK(query, scope, m);
      denseIds.forEach((id, rank) => {
        const c = candidates.get(id);
        if (c) c.denseRank = rank;
        else candidates.set(id, { key: id, denseRank: rank });
      });
    }
    if (candidates.size === 0) return { fused: [], exact, denseIds: denseIds ?? [], lexicalIds };
    if (query) this.setCosines(query, mode, k, candidates, exact);
    const all = fuse([...candidates.values()], candidates.size, mode, this.cfg);
    return { fused: this.orderTies(all, k, candidates).slice(0, k), exact, denseIds: denseIds ?? [], lexicalIds };
  }

  /**
   * Sets every candidate's cosine: exact (from the stored float vector; memoised in `exact`
   * for the query's second pass) for each one that could be in the top `k`, the int8
   * approximation for the rest. Reciprocal-rank fusion orders by rank, not by score: there
   * every cosine is exact.
   */
  private setCosines(query: Float32Array, mode: RankMode, k: number, candidates: Map<number, Candidate<number>>, exact: Map<number, number>): void {
    const read: number[] = [];
    if (mode === 'bm25' || this.cfg.method !== 'weighted' || !this.boundedCosines) {
      for (const c of candidates.values()) {
        const known = exact.get(c.key);
        if (known === undefined) read.push(c.key);
        else c.cosine = known;
      }
    } else {
      const list = [...candidates.values()];
      const ids = list.map((c) => c.key);
      const cosines = new Float64Array(ids.length);
      const errors = new Float64Array(ids.length);
      this.slab.approximateCosines(ids, query, cosines, errors);
      // Each candidate's score from below and from above (the score is monotone in the
      // cosine, either way by the configuration's signs); exact where the cosine is.
      const lows = new Float64Array(ids.length);
      const highs = new Float64Array(ids.length);
      let known = 0;
      for (let i = 0; i < list.length; i++) {
        const c = list[i];
        const e = exact.get(c.key);
        if (e !== undefined) {
          cosines[i] = e;
          errors[i] = 0;
        } else if (errors[i] < 0) {
          read.push(c.key);
          lows[i] = -Infinity;
          highs[i] = Infinity;
          continue;
        } else if (errors[i] === 0) {
          exact.set(c.key, cosines[i]);
        }
        c.cosine = cosines[i];
        const x = calibratedScoreOf(cosines[i] - errors[i], c.lexical, mode, this.cfg);
        const y = errors[i] === 0 ? x : calibratedScoreOf(cosines[i] + errors[i], c.lexical, mode, this.cfg);
        lows[i] = Math.min(x, y);
        highs[i] = Math.max(x, y);
        known++;
      }
      // The k-th best score some candidates surely reach: one whose best possible score is
      // under it has at least k others surely above it, and is outside the top k.
      const floor = known >= k ? lows.slice().sort().reverse()[k - 1] : -Infinity;
      for (let i = 0; i < list.length; i++) if (errors[i] > 0 && highs[i] >= floor - 1e-12) read.push(list[i].key);
    }
    if (read.length === 0) return;
    const rows = this.statements.get<[string], VectorRow>('SELECT id, vector FROM chunks WHERE id IN (SELECT value FROM json_each(?))').all(JSON.stringify(read));
    const vectors = new Map(rows.map((r) => [r.id, r.vector] as const));
    for (const id of read) {
      const v = vectors.get(id);
      const cosine = v ? dotBuffer(query, v) : 0;
      exact.set(id, cosine);
      candidates.get(id)!.cosine = cosine;
    }
  }

  /**
   * Candidates that tie exactly (same score, cosine and BM25: the same text in two documents)
   * put in document and chunk order (a chunk with a vector first), in place, where a tie
   * reaches the top `k`. Fused, they came in row-id order, and row ids follow the order chunks
   * were indexed in, which a replay after a crash or a rebuild does not keep: the answer must
   * not depend on it. Rows are read only for ties (rare).
   */
  private orderTies(fused: Fused<number>[], k: number, candidates: Map<number, Candidate<number>>): Fused<number>[] {
    const tied = (a: Fused<number>, b: Fused<number>): boolean => {
      const x = candidates.get(a.key);
      const y = candidates.get(b.key);
      return a.score === b.score && x?.cosine === y?.cosine && (x?.lexical ?? 0) === (y?.lexical ?? 0);
    };
    for (let start = 0; start < Math.min(k, fused.length); ) {
      let end = start + 1;
      while (end < fused.length && tied(fused[start], fused[end])) end++;
      if (end - start > 1) {
        const run = fused.slice(start, end);
        const rows = new Map(
          this.statements.get<[string], { id: number; document_id: string; chunk_index: number; has_vector: number }>(
            'SELECT id, document_id, chunk_index, vector IS NOT NULL AS has_vector FROM chunks WHERE id IN (SELECT value FROM json_each(?))',
          )
            .all(JSON.stringify(run.map((f) => f.key)))
            .map((r) => [r.id, r] as const),
        );
        run.sort((a, b) => {
          const x = rows.get(a.key);
          const y = rows.get(b.key);
          if (!x || !y) return a.key - b.key;
          if (x.has_vector !== y.has_vector) return y.has_vector - x.has_vector;
          return x.document_id < y.document_id ? -1 : x.document_id > y.document_id ? 1 : x.chunk_index - y.chunk_index;
        });
        fused.splice(start, run.length, ...run);
      }
      start = end;
    }
    return fused;
  }

  async search(request: SearchRequest): Promise<SearchHit[]> {
    this.assertOpen();
    const k = Math.max(0, Math.floor(request.k));
    if (k === 0) return [];
    const scope = this.catalog.scope(request.filters);
    if (!scope) return [];
    if (request.vectorModel !== undefined && this.active && request.vectorModel !== this.active.modelId) {
      throw new VectorModelChangedError(request.vectorModel, this.active.modelId);
    }
    const dims = this.slab.dims;
    const query = request.vector && request.vector.length > 0 && dims > 0 ? unitVector(request.vector) : undefined;
    if (query && query.length !== dims) throw new Error(`query vector has ${query.length} dimensions, index has ${dims}`);
    // Without a query vector every mode degrades to BM25.
    const mode = !query ? 'bm25' : (request.mode ?? 'hybrid');
    const terms = mode === 'dense' ? [] : this.lexical.originalTerms(request.text ?? '');

    const prf = this.cfg.prf;
    const lexicalFeedback = mode !== 'dense' && prf.docs > 0 && prf.terms > 0 && terms.length > 0;
    // With lexical feedback the first BM25 pass reads deeper: those rows are the pool the
    // expanded query re-ranks.
    const first = this.retrieve(terms, query, mode, request.filters, scope, k, undefined, undefined, lexicalFeedback ? Math.max(1, prf.poolDepth) : 1);
    let { fused } = first;
    const denseFeedback = mode !== 'bm25' && query !== undefined && prf.denseWeight > 0;
    if (prf.docs > 0 && fused.length > 0 && (lexicalFeedback || denseFeedback)) {
      // Pseudo-relevance feedback: the first pass's top chunks expand the query, then a second pass.
      const top = fused.slice(0, prf.docs).filter((f) => f.score > 0);
      if (top.length > 0) {
        const rows = this.rowsById(top.map((f) => f.key));
        const fed = top.filter((f) => rows.has(f.key));
        const expanded = lexicalFeedback
          ? this.lexical.expand(
              terms,
              fed.map((f) => ({ text: `${rows.get(f.key)!.document_title} ${rows.get(f.key)!.content}`, weight: f.score })),
              prf,
              scope.workspace,
            )
          : terms;
        const q2 = denseFeedback ? rocchio(query!, feedbackVectors(fed.map((f) => rows.get(f.key)!.vector)), prf.denseWeight) : query;
        // The dense leg is re-run only when its query changed; so are the cosines.
        // A pool depth below 1 re-ranks only the head of the first pass's BM25 list.
        const pool = first.lexicalIds.slice(0, Math.max(k, Math.ceil(Math.max(k, this.cfg.candidates) * prf.poolDepth)));
        const same = q2 === query;
        ({ fused } = this.retrieve(expanded, q2, mode, request.filters, scope, k, same ? first.denseIds : undefined, pool, 1, same ? first.exact : undefined));
      }
    }

    const hits: SearchHit[] = [];
    const shown = this.rowsById(fused.map((f) => f.key));
    for (const f of fused) {
      const r = shown.get(f.key);
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

  /** Whole rows by id. */
  private rowsById(ids: number[]): Map<number, ChunkRow> {
    if (ids.length === 0) return new Map();
    const rows = this.statements.get<[string], ChunkRow>('SELECT * FROM chunks WHERE id IN (SELECT value FROM json_each(?))').all(JSON.stringify(ids));
    return new Map(rows.map((r) => [r.id, r]));
  }

  /** Approximate in-memory footprint, and where the lexical index was loaded from, for benchmarks and tests. */
  stats(): {
    chunks: number;
    dims: number;
    vectorBytes: number;
    postings: number;
    lexicalFrom: 'snapshot' | 'caught-up' | 'text';
    denseIndex: { lists: number; trainedAt: number; from: 'file' | 'caught-up' | 'trained' } | undefined;
  } {
    const ann = this.slab.annIndex;
    return {
      chunks: this.slab.liveCount,
      dims: this.slab.dims,
      vectorBytes: this.slab.vectorBytes,
      postings: this.lexicalIndex.postings,
      lexicalFrom: this.lexicalFrom,
      denseIndex: ann ? { lists: ann.lists, trainedAt: ann.trainedAt, from: ann.caughtUp ? 'caught-up' : ann.restored ? 'file' : 'trained' } : undefined,
    };
  }
}

/** The workspace number of a chunk row id (each workspace owns one range: schema.ts). */
function workspaceOfRow(rowId: number): number {
  return Math.floor(rowId / WS_SPAN);
}

/** The stored float32 vectors of feedback chunks (those that have one). */
function feedbackVectors(blobs: (Buffer | null)[]): Float32Array[] {
  return blobs.filter((v): v is Buffer => v !== null).map(bufferToFloats);
}
