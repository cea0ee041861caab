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
  private readonly target: string | undefined;

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

  /** Creates the meta index and the first version with its aliases when missing (safe to race). */
  async connect(): Promise<void> {
    await this.createIndex(metaIndex(this.name), metaIndexBody(this.replicas));
    if (!(await this.client.indices.existsAlias({ name: readAlias(this.name) }))) {
      const first = versionedIndexName(this.name, 1);
      await this.createIndex(first, chunkIndexBody(this.dims, this.replicas));
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
    for (const operations of splitBulkOperations(bulkIndexOperations(index, documentId, chunks), this.maxBulkBytes)) {
      const res = await this.client.bulk({ operations, refresh: this.writeRefresh });
      if (res.errors) {
        const first = res.items.find((i) => i.index?.error)?.index?.error;
        throw new Error(`indexing ${documentId} failed: ${first?.type ?? 'unknown'}: ${first?.reason ?? ''}`);
      }
    }
    // New chunks were written over the old ids first, so the document never disappears from searches.
    const keep = chunks.map((c) => chunkDocId(documentId, c.chunkIndex));
    await this.client.deleteByQuery({ index, query: staleChunksQuery(documentId, keep), refresh: this.refresh, conflicts: 'proceed' });
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
    await this.client.updateByQuery({ index: await this.writeIndex(), query: { term: { documentId } }, script, refresh: this.refresh, conflicts: 'proceed' });
  }

  async search(request: SearchRequest): Promise<SearchHit[]> {
    const k = Math.max(0, Math.floor(request.k));
    if (k === 0) return [];
    const index = this.target ?? readAlias(this.name);
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
    await this.client.deleteByQuery({ index, query: { match_all: {} }, refresh: true, conflicts: 'proceed' });
    await this.client.delete({ index: metaIndex(this.name), id: checkpointDocId(index), refresh: true }, { ignore: [404] });
  }

  async close(): Promise<void> {
    if (this.ownsClient && this.target === undefined) await this.client.close();
  }
}
