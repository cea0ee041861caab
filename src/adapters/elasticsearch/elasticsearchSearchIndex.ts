import { Client, errors } from '@elastic/elasticsearch';
import type { DocumentFields, IndexedChunk, SearchFilters, SearchHit, SearchIndex, SearchRequest } from '../../ports/searchIndex';
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
  metaIndex,
  metaIndexBody,
  moveWriteAliasActions,
  parseIndexVersion,
  queryTermStats,
  readAlias,
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
  /** Make every write visible to searches before it resolves (default true; projector batches may set false and rely on the refresh interval). */
  refresh?: boolean;
}

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
  }

  static async create(options: ElasticsearchSearchIndexOptions): Promise<ElasticsearchSearchIndex> {
    const index = new ElasticsearchSearchIndex(options);
    await index.connect();
    return index;
  }

  /** Creates the meta index and the first version with its aliases when missing (safe to race). */
  async connect(): Promise<void> {
    await this.createIndex(metaIndex(this.name), metaIndexBody());
    if (!(await this.client.indices.existsAlias({ name: readAlias(this.name) }))) {
      const first = versionedIndexName(this.name, 1);
      await this.createIndex(first, chunkIndexBody(this.dims));
      await this.client.indices.updateAliases({ actions: swapAliasActions(this.name, first) });
    }
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
   * Starts a rebuild: creates the next version (with new dimensions, for a model change)
   * and points the write alias at it; searches stay on the current version. The new
   * version's checkpoint starts at 0, so the projector replays the log into it.
   */
  async startNewIndex(dimensions = this.dims): Promise<string> {
    const versions = await this.versions();
    const next = versionedIndexName(this.name, (versions[versions.length - 1] ?? 0) + 1);
    await this.createIndex(next, chunkIndexBody(dimensions));
    await this.client.indices.updateAliases({ actions: moveWriteAliasActions(this.name, next) });
    this.dims = dimensions;
    return next;
  }

  /**
   * Points reads at the index being written (starting one first when no rebuild is under
   * way), in one atomic alias update, then deletes the older versions. Returns the index
   * now serving reads.
   */
  async swapToNewIndex(dimensions = this.dims): Promise<string> {
    const [reading, writing] = await Promise.all([this.aliasTarget(readAlias(this.name)), this.aliasTarget(writeAlias(this.name))]);
    const target = writing !== reading ? writing : await this.startNewIndex(dimensions);
    await this.client.indices.updateAliases({ actions: swapAliasActions(this.name, target) });
    const old = (await this.versions()).map((v) => versionedIndexName(this.name, v)).filter((i) => i !== target);
    if (old.length) await this.client.indices.delete({ index: old, ignore_unavailable: true });
    return target;
  }

  /** Deletes every index of this name (tests, decommissioning). */
  async dropAll(): Promise<void> {
    await this.client.indices.delete({ index: [`${this.name}-v*`, metaIndex(this.name)], ignore_unavailable: true, allow_no_indices: true });
  }

  async upsertDocument(documentId: string, chunks: IndexedChunk[]): Promise<void> {
    const index = await this.aliasTarget(writeAlias(this.name));
    if (chunks.length) {
      const res = await this.client.bulk({ operations: bulkIndexOperations(index, documentId, chunks), refresh: this.refresh });
      if (res.errors) {
        const first = res.items.find((i) => i.index?.error)?.index?.error;
        throw new Error(`indexing ${documentId} failed: ${first?.type ?? 'unknown'}: ${first?.reason ?? ''}`);
      }
    }
    // New chunks were written over the old ids first, so the document never disappears from searches.
    const keep = chunks.map((c) => chunkDocId(documentId, c.chunkIndex));
    await this.client.deleteByQuery({ index, query: staleChunksQuery(documentId, keep), refresh: this.refresh, conflicts: 'proceed' });
  }

  async deleteDocument(documentId: string): Promise<void> {
    await this.client.deleteByQuery({ index: writeAlias(this.name), query: { term: { documentId } }, refresh: this.refresh, conflicts: 'proceed' });
  }

  async deleteWorkspace(workspaceId: string): Promise<void> {
    await this.client.deleteByQuery({ index: writeAlias(this.name), query: { term: { workspaceId } }, refresh: this.refresh, conflicts: 'proceed' });
  }

  async updateDocumentFields(documentId: string, fields: DocumentFields): Promise<void> {
    const script = updateFieldsScript(fields);
    if (!script.source) return;
    await this.client.updateByQuery({ index: writeAlias(this.name), query: { term: { documentId } }, script, refresh: this.refresh, conflicts: 'proceed' });
  }

  async search(request: SearchRequest): Promise<SearchHit[]> {
    const k = Math.max(0, Math.floor(request.k));
    if (k === 0) return [];
    const index = readAlias(this.name);
    const m = Math.max(k, this.cfg.candidates);
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
    return (await this.client.count({ index: readAlias(this.name), query: countDocumentsQuery(filters) })).count;
  }

  async getCheckpoint(): Promise<number> {
    const index = await this.aliasTarget(writeAlias(this.name));
    const res = await this.client.get<{ position: number }>({ index: metaIndex(this.name), id: checkpointDocId(index) }, { ignore: [404] });
    return res.found && res._source ? res._source.position : 0;
  }

  async setCheckpoint(position: number): Promise<void> {
    const index = await this.aliasTarget(writeAlias(this.name));
    await this.client.index({ index: metaIndex(this.name), id: checkpointDocId(index), document: { position, index }, refresh: this.refresh });
  }

  async clear(): Promise<void> {
    const index = await this.aliasTarget(writeAlias(this.name));
    await this.client.deleteByQuery({ index, query: { match_all: {} }, refresh: true, conflicts: 'proceed' });
    await this.client.delete({ index: metaIndex(this.name), id: checkpointDocId(index), refresh: true }, { ignore: [404] });
  }

  async close(): Promise<void> {
    if (this.ownsClient) await this.client.close();
  }
}
