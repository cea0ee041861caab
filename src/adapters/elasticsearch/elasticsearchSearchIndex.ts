import { Client, errors } from '@elastic/elasticsearch';
import {
  type ChunkVector,
  type DocumentFields,
  type IndexedChunk,
  type SearchFilters,
  type SearchHit,
  type SearchIndex,
  type SearchRequest,
  type VectorModel,
  type VectorModels,
  VectorModelChangedError,
} from '../../ports/searchIndex';
import { type Candidate, type HybridConfig, fuse, resolveHybridConfig } from '../../search/hybrid';
import {
  ChunkSource,
  bm25SearchBody,
  bm25UpperBound,
  bulkIndexOperations,
  checkpointDocId,
  chunkDocId,
  chunkIndexBody,
  cosineFromExactScore,
  countDocumentsQuery,
  exactCosineBody,
  knnSearchBody,
  lexicalEvidence,
  META_PROPERTIES,
  metaIndex,
  metaIndexBody,
  ModelDoc,
  modelDocId,
  nextModelDocId,
  parseIndexVersion,
  queryTermStats,
  readAlias,
  splitBulkOperations,
  staleChunksQuery,
  swapAliasActions,
  updateFieldsScript,
  versionedIndexName,
  writeAlias,
} from './elasticsearchQueries';

export interface ElasticsearchSearchIndexOptions {
  /** e.g. `http://localhost:9200`; ignored when `client` is given. */
  node?: string;
  client?: Client;
  /** Base name: read alias `<name>`, write alias `<name>-write`, indexes `<name>-v<n>`, meta `<name>-meta`. */
  name: string;
  /** Dimensions of the embedding model (the `dense_vector` mapping is fixed per index version). */
  dimensions: number;
  hybrid?: Partial<HybridConfig>;
  /** Make every write visible to searches before it resolves (default true: `refresh=wait_for` on writes, a refresh after by-query writes, which cannot wait); false relies on the refresh interval. */
  refresh?: boolean;
  /** Replicas of each index (default 0, for a single node; set 1 or more on a cluster). */
  replicas?: number;
  /** Bytes of JSON per bulk request (default 10 MiB; Elasticsearch refuses requests over `http.max_content_length`, 100 MB). */
  maxBulkBytes?: number;
  /** Write into this concrete index (a rebuild's new version, see rebuildInto) instead of through the write alias. */
  target?: string;
  /** The configured embedding model: names the vectors of an index written before indexes recorded their model. */
  model?: string;
  /** How long the active model read from the server is trusted (ms, default 2000): searches of other processes see a switch within it. */
  modelCacheMs?: number;
}

export const DEFAULT_MAX_BULK_BYTES = 10 * 1024 * 1024;

function isResourceExists(err: unknown): boolean {
  return err instanceof errors.ResponseError && err.body !== null && typeof err.body === 'object' && JSON.stringify(err.body).includes('resource_already_exists_exception');
}

/**
 * SearchIndex on Elasticsearch (8.x/9.x): chunks in a versioned index `<name>-v<n>` with a
 * `dense_vector` (cosine, HNSW) and english-analysed text, reached through a read alias
 * and a write alias so that a rebuild (or an embedding model change) fills a new version
 * while searches keep using the old one, then swaps both aliases in one atomic call.
 *
 * Ranking uses the shared hybrid.ts: BM25 (combined_fields over content and title)
 * normalised by its upper bound Σ idf from the query's term statistics, exact cosine of
 * the query with every candidate (script_score), and the same fusion and calibration as
 * the embedded index, so both report scores on one scale.
 */
export class ElasticsearchSearchIndex implements SearchIndex {
  private readonly client: Client;
  private readonly ownsClient: boolean;
  private readonly name: string;
  private dims: number;
  private readonly cfg: HybridConfig;
  private readonly refresh: boolean;
  private readonly replicas: number;
  private readonly maxBulkBytes: number;
  private target: string | undefined;
  private readonly model: string | undefined;
  private readonly modelCacheMs: number;
  private modelCache: { at: number; models: VectorModels } | undefined;

  constructor(options: ElasticsearchSearchIndexOptions) {
    if (options.client) {
      this.client = options.client;
      this.ownsClient = false;
    } else if (options.node) {
      this.client = new Client({ node: options.node });
      this.ownsClient = true;
    } else throw new Error('ElasticsearchSearchIndex needs a node URL or a client');
    if (!/^[a-z0-9][a-z0-9_-]*$/.test(options.name)) throw new Error(`invalid index name ${options.name}`);
    this.name = options.name;
    this.dims = options.dimensions;
    this.cfg = resolveHybridConfig(options.hybrid);
    this.refresh = options.refresh ?? true;
    this.replicas = options.replicas ?? 0;
    this.maxBulkBytes = options.maxBulkBytes ?? DEFAULT_MAX_BULK_BYTES;
    this.target = options.target;
    this.model = options.model;
    this.modelCacheMs = options.modelCacheMs ?? 2000;
    if (this.target !== undefined && parseIndexVersion(this.name, this.target) === null) throw new Error(`${this.target} is not a version of ${this.name}`);
  }

  /** `refresh` of single and bulk writes: wait for the next refresh instead of forcing one per write. */
  private get writeRefresh(): 'wait_for' | false {
    return this.refresh ? 'wait_for' : false;
  }

  /** The concrete index writes go to: the rebuild's target, else the write alias's index. */
  private writeIndex(): Promise<string> {
    return this.target !== undefined ? Promise.resolve(this.target) : this.aliasTarget(writeAlias(this.name));
  }

  static async create(options: ElasticsearchSearchIndexOptions): Promise<ElasticsearchSearchIndex> {
    const index = new ElasticsearchSearchIndex(options);
    await index.connect();
    return index;
  }

  /**
   * Creates the meta index and the first version with its aliases when missing (safe to race).
   * An index of an older layout gets the model fields, and its vectors the configured model's
   * name when their dimensions match (else `unknown:<dims>d`).
   */
  async connect(): Promise<void> {
    const hadMeta = await this.client.indices.exists({ index: metaIndex(this.name) });
    await this.createIndex(metaIndex(this.name), metaIndexBody(this.replicas));
    if (!(await this.client.indices.existsAlias({ name: readAlias(this.name) }))) {
      const first = versionedIndexName(this.name, 1);
      await this.createIndex(first, chunkIndexBody(this.dims, this.replicas));
      await this.client.indices.updateAliases({ actions: swapAliasActions(this.name, first) });
      return;
    }
    const live = await this.aliasTarget(readAlias(this.name));
    if (hadMeta) await this.client.indices.putMapping({ index: metaIndex(this.name), properties: META_PROPERTIES });
    const known = await this.modelDoc(modelDocId(live));
    if (known) {
      this.dims = known.dimensions;
      return;
    }
    await this.client.indices.putMapping({ index: live, properties: { model: { type: 'keyword' } } });
    const mapping = await this.client.indices.getMapping({ index: live });
    const vector = mapping[live]?.mappings?.properties?.vector as { dims?: number } | undefined;
    const dims = vector?.dims ?? this.dims;
    const { count } = await this.client.count({ index: live });
    if (count > 0) await this.putModelDoc(modelDocId(live), { index: live, modelId: dims === this.dims && this.model ? this.model : `unknown:${dims}d`, dimensions: dims });
    this.dims = dims;
  }

  private async modelDoc(id: string): Promise<ModelDoc | undefined> {
    const res = await this.client.get<ModelDoc>({ index: metaIndex(this.name), id }, { ignore: [404] });
    return res.found && res._source ? res._source : undefined;
  }

  private async putModelDoc(id: string, doc: ModelDoc): Promise<void> {
    this.modelCache = undefined;
    await this.client.index({ index: metaIndex(this.name), id, document: doc, refresh: this.writeRefresh });
  }

  /** The concrete index the active vectors live in: the rebuild's target, else the read alias's index. */
  private baseIndex(): Promise<string> {
    return this.target !== undefined ? Promise.resolve(this.target) : this.aliasTarget(readAlias(this.name));
  }

  async vectorModels(): Promise<VectorModels> {
    const cached = this.modelCache;
    if (cached && Date.now() - cached.at < this.modelCacheMs) return cached.models;
    const base = await this.baseIndex();
    const [active, next] = await Promise.all([this.modelDoc(modelDocId(base)), this.modelDoc(nextModelDocId(base))]);
    const firstChunks = { term: { isFirst: true } };
    const documents = (await this.client.count({ index: base, query: firstChunks })).count;
    // Documents with the next model's vectors (a document copied there without them does not count).
    const withVectors = { bool: { filter: [firstChunks, { exists: { field: 'vector' } }] } };
    const built = next ? (await this.client.count({ index: next.index, query: withVectors }, { ignore: [404] })).count ?? 0 : 0;
    const models: VectorModels = {
      ...(active ? { active: { modelId: active.modelId, dimensions: active.dimensions } } : {}),
      ...(next ? { next: { modelId: next.modelId, dimensions: next.dimensions, documents: built } } : {}),
      documents,
    };
    this.modelCache = { at: Date.now(), models };
    if (active) this.dims = active.dimensions;
    return models;
  }

  /** The active model, fixed by the first vectors when the index has none (an empty index of other dimensions is made again with theirs). */
  private async activeModelFor(chunk: IndexedChunk | undefined): Promise<ModelDoc | undefined> {
    const base = await this.baseIndex();
    const known = await this.modelDoc(modelDocId(base));
    if (known || !chunk) return known;
    const dimensions = chunk.vector.length;
    if (dimensions !== this.dims) {
      const { count } = await this.client.count({ index: base });
      if (count > 0) throw new Error(`index ${base} holds chunks without vectors of ${this.dims} dimensions; vectors of ${dimensions} cannot join them`);
      await this.client.indices.delete({ index: base });
      await this.createIndex(base, chunkIndexBody(dimensions, this.replicas));
      if (this.target === undefined) await this.client.indices.updateAliases({ actions: swapAliasActions(this.name, base) });
      this.dims = dimensions;
    }
    const doc = { index: base, modelId: chunk.model ?? this.model ?? `unnamed:${dimensions}d`, dimensions };
    await this.putModelDoc(modelDocId(base), doc);
    return doc;
  }

  async beginVectorModel(model: VectorModel): Promise<void> {
    const base = await this.baseIndex();
    const next = await this.modelDoc(nextModelDocId(base));
    if (next?.modelId === model.modelId) return;
    if (next) await this.dropNext(base, next);
    if ((await this.modelDoc(modelDocId(base)))?.modelId === model.modelId) return;
    const index = await this.startNewIndex(model.dimensions);
    await this.putModelDoc(modelDocId(index), { index, ...model });
    await this.putModelDoc(nextModelDocId(base), { index, ...model });
  }

  private async dropNext(base: string, next: ModelDoc): Promise<void> {
    await this.client.indices.delete({ index: next.index, ignore_unavailable: true });
    await this.client.delete({ index: metaIndex(this.name), id: nextModelDocId(base), refresh: this.writeRefresh }, { ignore: [404] });
    await this.client.delete({ index: metaIndex(this.name), id: modelDocId(next.index), refresh: this.writeRefresh }, { ignore: [404] });
    this.modelCache = undefined;
  }

  async dropVectorModel(modelId: string): Promise<void> {
    const base = await this.baseIndex();
    const next = await this.modelDoc(nextModelDocId(base));
    if (next?.modelId === modelId) await this.dropNext(base, next);
  }

  /** A document's chunks as the base index holds them (without vectors), in chunk order. */
  private async chunksOf(index: string, documentId: string): Promise<ChunkSource[]> {
    const out: ChunkSource[] = [];
    let after: number | undefined;
    for (;;) {
      const res = await this.client.search<ChunkSource>({
        index,
        size: 1000,
        query: { term: { documentId } },
        sort: [{ chunkIndex: 'asc' }],
        _source: { excludes: ['vector'] },
        ...(after !== undefined ? { search_after: [after] } : {}),
      });
      const hits = res.hits.hits.filter((h) => h._source);
      for (const h of hits) out.push(h._source as ChunkSource);
      if (hits.length < 1000) return out;
      after = (hits[hits.length - 1]._source as ChunkSource).chunkIndex;
    }
  }

  async putVectors(documentId: string, modelId: string, vectors: ChunkVector[]): Promise<void> {
    const given = new Map(vectors.filter((v) => v.vector.length > 0).map((v) => [v.chunkIndex, Array.from(v.vector)]));
    if (given.size === 0) return;
    const base = await this.baseIndex();
    const [active, next] = await Promise.all([this.modelDoc(modelDocId(base)), this.modelDoc(nextModelDocId(base))]);
    const dims = given.values().next().value?.length ?? 0;
    // The next model's vectors go to the version being built; the active model's (or the first
    // vectors of an index without any) to the base index; any other model's are stale.
    const target: ModelDoc | undefined =
      next?.modelId === modelId ? next : active?.modelId === modelId ? active : !active ? { index: base, modelId, dimensions: dims } : undefined;
    if (!target) return;
    const chunks = await this.chunksOf(base, documentId);
    if (chunks.length === 0) return;
    if (!active && target.index === base) await this.activeModelFor({ ...chunks[0], vector: [...given.values()][0], model: modelId });
    const ops: unknown[] = [];
    for (const c of chunks) {
      const v = given.get(c.chunkIndex);
      if (!v) continue;
      if (v.length !== target.dimensions) throw new Error(`vector has ${v.length} dimensions, ${modelId} has ${target.dimensions}`);
      ops.push({ index: { _index: target.index, _id: chunkDocId(documentId, c.chunkIndex) } }, { ...c, vector: v, model: modelId });
    }
    await this.bulk(documentId, ops as Parameters<typeof splitBulkOperations>[0]);
  }

  private async bulk(documentId: string, ops: unknown[]): Promise<void> {
    for (const operations of splitBulkOperations(ops, this.maxBulkBytes)) {
      const res = await this.client.bulk({ operations: operations as never, refresh: this.writeRefresh });
      if (res.errors) {
        const first = res.items.find((i) => i.index?.error)?.index?.error;
        throw new Error(`indexing ${documentId} failed: ${first?.type ?? 'unknown'}: ${first?.reason ?? ''}`);
      }
    }
  }

  /**
   * The switch: the version built with the next model becomes the one reads and writes use
   * (both aliases in one atomic `_aliases` call; a rebuild's adapter re-targets), with the
   * checkpoint of the version it replaces, and the old version is deleted with its vectors.
   */
  async switchVectorModel(model: VectorModel): Promise<void> {
    const base = await this.baseIndex();
    if ((await this.modelDoc(modelDocId(base)))?.modelId === model.modelId) return;
    const next = await this.modelDoc(nextModelDocId(base));
    if (next?.modelId !== model.modelId) throw new Error(`no version of ${this.name} was built with ${model.modelId}: EmbeddingModelChangeStarted was not applied`);
    await this.client.index({ index: metaIndex(this.name), id: checkpointDocId(next.index), document: { position: await this.checkpointOf(base), index: next.index }, refresh: true });
    if (this.target === undefined) await this.client.indices.updateAliases({ actions: swapAliasActions(this.name, next.index) });
    else this.target = next.index;
    await this.client.indices.delete({ index: base, ignore_unavailable: true });
    await this.client.delete({ index: metaIndex(this.name), id: nextModelDocId(base), refresh: this.writeRefresh }, { ignore: [404] });
    await this.client.delete({ index: metaIndex(this.name), id: modelDocId(base), refresh: this.writeRefresh }, { ignore: [404] });
    await this.client.delete({ index: metaIndex(this.name), id: checkpointDocId(base), refresh: true }, { ignore: [404] });
    this.dims = model.dimensions;
    this.modelCache = undefined;
  }

  private async createIndex(index: string, body: ReturnType<typeof metaIndexBody>): Promise<void> {
    try {
      if (await this.client.indices.exists({ index })) return;
      await this.client.indices.create({ index, ...body });
    } catch (err) {
      if (!isResourceExists(err)) throw err;
    }
  }

  private async versions(): Promise<number[]> {
    const res = await this.client.indices.get({ index: `${this.name}-v*`, allow_no_indices: true, expand_wildcards: 'open' });
    return Object.keys(res)
      .map((i) => parseIndexVersion(this.name, i))
      .filter((v): v is number => v !== null)
      .sort((a, b) => a - b);
  }

  private async aliasTarget(alias: string): Promise<string> {
    const res = await this.client.indices.getAlias({ name: alias });
    const [index] = Object.keys(res);
    if (!index) throw new Error(`alias ${alias} points to no index`);
    return index;
  }

  /**
   * Starts a rebuild: creates the next version (with new dimensions, for a model change).
   * Aliases do not move: searches and the running projector stay on the current version.
   * Feed the new version with its own projection from position 0 through `rebuildInto`
   * (its checkpoint is its own), then `swapToNewIndex` once it has caught up.
   */
  async startNewIndex(dimensions = this.dims): Promise<string> {
    const versions = await this.versions();
    const next = versionedIndexName(this.name, (versions[versions.length - 1] ?? 0) + 1);
    await this.createIndex(next, chunkIndexBody(dimensions, this.replicas));
    return next;
  }

  /** The SearchIndex a rebuild's projection writes through: the concrete index `index`, its own checkpoint. */
  rebuildInto(index: string, dimensions = this.dims): ElasticsearchSearchIndex {
    return new ElasticsearchSearchIndex({
      client: this.client,
      name: this.name,
      dimensions,
      hybrid: this.cfg,
      refresh: this.refresh,
      replicas: this.replicas,
      maxBulkBytes: this.maxBulkBytes,
      target: index,
    });
  }

  private async checkpointOf(index: string): Promise<number> {
    const res = await this.client.get<{ position: number }>({ index: metaIndex(this.name), id: checkpointDocId(index) }, { ignore: [404] });
    return res.found && res._source ? res._source.position : 0;
  }

  /**
   * Points reads and writes at the newest version in one atomic alias update, then deletes
   * the older versions. Refused unless a rebuild (startNewIndex + rebuildInto) exists and
   * its checkpoint has reached the live index's. Returns the index now serving reads.
   */
  async swapToNewIndex(dimensions = this.dims): Promise<string> {
    const live = await this.aliasTarget(readAlias(this.name));
    const liveVersion = parseIndexVersion(this.name, live) ?? 0;
    const newer = (await this.versions()).filter((v) => v > liveVersion);
    if (newer.length === 0) throw new Error(`no rebuild of ${this.name} under way: startNewIndex, replay the log into it (rebuildInto), then swap`);
    const target = versionedIndexName(this.name, newer[newer.length - 1]);
    const [rebuilt, current] = await Promise.all([this.checkpointOf(target), this.checkpointOf(live)]);
    if (rebuilt < current) throw new Error(`rebuild ${target} has reached position ${rebuilt}, the live index ${live} is at ${current}: let it catch up before swapping`);
    await this.client.indices.updateAliases({ actions: swapAliasActions(this.name, target) });
    this.dims = dimensions;
    const old = (await this.versions()).map((v) => versionedIndexName(this.name, v)).filter((i) => i !== target);
    if (old.length) await this.client.indices.delete({ index: old, ignore_unavailable: true });
    return target;
  }

  /** Deletes every index of this name (tests, decommissioning): listed, then deleted by name (servers refuse wildcard deletes by default). */
  async dropAll(): Promise<void> {
    const indices = [...(await this.versions()).map((v) => versionedIndexName(this.name, v)), metaIndex(this.name)];
    await this.client.indices.delete({ index: indices, ignore_unavailable: true, allow_no_indices: true });
  }

  async upsertDocument(documentId: string, chunks: IndexedChunk[]): Promise<void> {
    const index = await this.writeIndex();
    const active = await this.activeModelFor(chunks.find((c) => c.vector.length > 0));
    for (const c of chunks) {
      if (c.vector.length > 0 && active && c.model !== undefined && c.model !== active.modelId) throw new Error(`a vector of ${c.model} upserted into an index of ${active.modelId}`);
    }
    await this.bulk(documentId, bulkIndexOperations(index, documentId, chunks.map((c) => (c.vector.length > 0 && active ? { ...c, model: active.modelId } : c))));
    // New chunks were written over the old ids first, so the document never disappears from searches.
    const keep = chunks.map((c) => chunkDocId(documentId, c.chunkIndex));
    await this.client.deleteByQuery({ index, query: staleChunksQuery(documentId, keep), refresh: this.refresh, conflicts: 'proceed' });
    // During a model change the version being built gets the chunks that have its model's vectors.
    const next = await this.modelDoc(nextModelDocId(await this.baseIndex()));
    if (!next) return;
    // Every chunk goes there (one without the next model's vector is found by BM25 after the switch, until it gets one).
    const built = chunks.map((c) => (c.next?.model === next.modelId && c.next.vector.length > 0 ? { ...c, vector: c.next.vector, model: next.modelId } : { ...c, vector: [], model: undefined }));
    if (built.length > 0) await this.bulk(documentId, bulkIndexOperations(next.index, documentId, built));
    await this.client.deleteByQuery({ index: next.index, query: staleChunksQuery(documentId, keep), refresh: this.refresh, conflicts: 'proceed' });
  }

  /** Where deletions go: every version (the live one and a rebuild's), so an erased document leaves reads at once and a rebuild too. */
  private deletionTargets(): string {
    return this.target ?? `${this.name}-v*`;
  }

  async deleteDocument(documentId: string): Promise<void> {
    await this.client.deleteByQuery({ index: this.deletionTargets(), query: { term: { documentId } }, refresh: this.refresh, conflicts: 'proceed', allow_no_indices: true });
  }

  async deleteWorkspace(workspaceId: string): Promise<void> {
    await this.client.deleteByQuery({ index: this.deletionTargets(), query: { term: { workspaceId } }, refresh: this.refresh, conflicts: 'proceed', allow_no_indices: true });
  }

  async updateDocumentFields(documentId: string, fields: DocumentFields): Promise<void> {
    const script = updateFieldsScript(fields);
    if (!script.source) return;
    const next = await this.modelDoc(nextModelDocId(await this.baseIndex()));
    // The version being built (a model change) holds copies of the chunks: they change too.
    const index = next ? `${await this.writeIndex()},${next.index}` : await this.writeIndex();
    await this.client.updateByQuery({ index, query: { term: { documentId } }, script, refresh: this.refresh, conflicts: 'proceed' });
  }

  async search(request: SearchRequest): Promise<SearchHit[]> {
    try {
      return await this.searchOnce(request);
    } catch (err) {
      // Another process switched models within the cache's trust: a query of the old model's
      // dimensions is refused by the server. Read the model again and say so.
      if (request.vectorModel === undefined || !(err instanceof errors.ResponseError)) throw err;
      this.modelCache = undefined;
      const { active } = await this.vectorModels();
      if (active && active.modelId !== request.vectorModel) throw new VectorModelChangedError(request.vectorModel, active.modelId);
      throw err;
    }
  }

  private async searchOnce(request: SearchRequest): Promise<SearchHit[]> {
    const k = Math.max(0, Math.floor(request.k));
    if (k === 0) return [];
    const index = this.target ?? readAlias(this.name);
    const m = Math.max(k, this.cfg.candidates);
    if (request.vectorModel !== undefined) {
      const { active } = await this.vectorModels();
      if (active && active.modelId !== request.vectorModel) throw new VectorModelChangedError(request.vectorModel, active.modelId);
    }
    const vector = request.vector && request.vector.length > 0 ? Array.from(request.vector) : undefined;
    if (vector && vector.length !== this.dims) throw new Error(`query vector has ${vector.length} dimensions, index has ${this.dims}`);
    const mode = !vector ? 'bm25' : (request.mode ?? 'hybrid');
    const candidates = new Map<string, Candidate<string>>();
    const sources = new Map<string, ChunkSource>();
    const text = (request.text ?? '').trim();

    if (mode !== 'dense' && text) {
      const [res, tv] = await Promise.all([
        this.client.search<ChunkSource>({ index, ...bm25SearchBody(text, request.filters, m, this.cfg.titleWeight) }),
        this.client.termvectors({ index, doc: { content: text }, fields: ['content'], term_statistics: true, field_statistics: true, positions: false, offsets: false, payloads: false }),
      ]);
      const stats = queryTermStats(tv);
      const bound = bm25UpperBound(stats.terms, stats.docCount);
      res.hits.hits.forEach((h, rank) => {
        if (!h._id || !h._source) return;
        sources.set(h._id, h._source);
        candidates.set(h._id, { key: h._id, lexical: lexicalEvidence(h._score ?? 0, bound), lexicalRank: rank });
      });
    }
    if (mode !== 'bm25' && vector) {
      const res = await this.client.search<ChunkSource>({ index, ...knnSearchBody(vector, request.filters, m) });
      res.hits.hits.forEach((h, rank) => {
        if (!h._id || !h._source) return;
        sources.set(h._id, h._source);
        const c = candidates.get(h._id);
        if (c) c.denseRank = rank;
        else candidates.set(h._id, { key: h._id, denseRank: rank });
      });
    }
    if (candidates.size === 0) return [];
    if (vector) {
      // Exact cosine for every candidate, as the embedded index computes it.
      const ids = [...candidates.keys()];
      const res = await this.client.search({ index, ...exactCosineBody(ids, vector) });
      for (const c of candidates.values()) c.cosine = 0;
      for (const h of res.hits.hits) {
        const c = h._id ? candidates.get(h._id) : undefined;
        if (c) c.cosine = cosineFromExactScore(h._score ?? 1);
      }
    }
    const hits: SearchHit[] = [];
    for (const f of fuse([...candidates.values()], k, mode, this.cfg)) {
      const s = sources.get(f.key);
      if (!s) continue;
      const hit: SearchHit = {
        documentId: s.documentId,
        documentTitle: s.documentTitle,
        content: s.content,
        chunkIndex: s.chunkIndex,
        score: f.score,
        tags: s.tags,
        purpose: s.purpose,
      };
      if (s.page !== undefined && s.page !== null) hit.page = s.page;
      if (s.section !== undefined && s.section !== null) hit.section = s.section;
      hits.push(hit);
    }
    return hits;
  }

  async countDocuments(filters: SearchFilters): Promise<number> {
    return (await this.client.count({ index: this.target ?? readAlias(this.name), query: countDocumentsQuery(filters) })).count;
  }

  async getCheckpoint(): Promise<number> {
    return this.checkpointOf(await this.writeIndex());
  }

  async setCheckpoint(position: number): Promise<void> {
    const index = await this.writeIndex();
    await this.client.index({ index: metaIndex(this.name), id: checkpointDocId(index), document: { position, index }, refresh: this.writeRefresh });
  }

  async clear(): Promise<void> {
    const index = await this.writeIndex();
    const next = await this.modelDoc(nextModelDocId(index));
    if (next) await this.dropNext(index, next);
    await this.client.deleteByQuery({ index, query: { match_all: {} }, refresh: true, conflicts: 'proceed' });
    await this.client.delete({ index: metaIndex(this.name), id: checkpointDocId(index), refresh: true }, { ignore: [404] });
    await this.client.delete({ index: metaIndex(this.name), id: modelDocId(index), refresh: this.writeRefresh }, { ignore: [404] });
    this.modelCache = undefined;
  }

  async close(): Promise<void> {
    if (this.ownsClient && this.target === undefined) await this.client.close();
  }
}
