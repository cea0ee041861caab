import type { estypes } from '@elastic/elasticsearch';
import type { IndexedChunk, SearchFilters } from '../../ports/searchIndex';

/**
 * Pure request builders for the Elasticsearch search index (no client, no I/O), so the
 * exact JSON sent to the server is unit-tested.
 */

/** Source of one chunk document (`vector` is indexed but not returned by searches). */
export interface ChunkSource {
  workspaceId: string;
  documentId: string;
  documentTitle: string;
  purpose: 'KNOWLEDGE' | 'INSTRUCTION';
  tags: string[];
  chunkIndex: number;
  content: string;
  page?: number;
  section?: string;
  /** Set on exactly one chunk per document, so documents are counted exactly with `_count`. */
  isFirst: boolean;
  vector?: number[];
  /** The embedding model of `vector`. */
  model?: string;
}

/** Versioned concrete index behind the aliases: `<name>-v<n>`. */
export function versionedIndexName(name: string, version: number): string {
  return `${name}-v${version}`;
}

/** The version of a concrete index name, or null when it is not one of ours. */
export function parseIndexVersion(name: string, index: string): number | null {
  const prefix = `${name}-v`;
  if (!index.startsWith(prefix)) return null;
  const rest = index.slice(prefix.length);
  return /^[1-9][0-9]*$/.test(rest) ? Number(rest) : null;
}

export const readAlias = (name: string): string => name;
export const writeAlias = (name: string): string => `${name}-write`;
export const metaIndex = (name: string): string => `${name}-meta`;

/** Settings and mapping of a chunk index. One shard keeps BM25 statistics global, as the lexical normalisation assumes. */
export function chunkIndexBody(dims: number, replicas = 0): { settings: estypes.IndicesIndexSettings; mappings: estypes.MappingTypeMapping } {
  if (!Number.isInteger(dims) || dims <= 0) throw new RangeError(`invalid vector dimensions ${dims}`);
  return {
    settings: { number_of_shards: 1, number_of_replicas: replicas },
    mappings: {
      dynamic: 'strict',
      properties: {
        workspaceId: { type: 'keyword' },
        documentId: { type: 'keyword' },
        documentTitle: { type: 'text', analyzer: 'english' },
        purpose: { type: 'keyword' },
        tags: { type: 'keyword' },
        chunkIndex: { type: 'integer' },
        content: { type: 'text', analyzer: 'english' },
        page: { type: 'integer' },
        section: { type: 'keyword', index: false },
        isFirst: { type: 'boolean' },
        model: { type: 'keyword' },
        // Float HNSW graph (no quantisation); scores of kNN hits are (1 + cosine) / 2.
        vector: { type: 'dense_vector', dims, index: true, similarity: 'cosine', index_options: { type: 'hnsw', m: 16, ef_construction: 100 } },
      },
    },
  };
}

export function metaIndexBody(replicas = 0): { settings: estypes.IndicesIndexSettings; mappings: estypes.MappingTypeMapping } {
  return {
    settings: { number_of_shards: 1, number_of_replicas: replicas },
    mappings: { dynamic: 'strict', properties: META_PROPERTIES },
  };
}

/** Fields of meta documents: checkpoints (`position`, `index`) and vector models (`modelId`, `dimensions`). */
export const META_PROPERTIES: Record<string, estypes.MappingProperty> = {
  position: { type: 'long' },
  index: { type: 'keyword' },
  modelId: { type: 'keyword' },
  dimensions: { type: 'integer' },
};

/** Meta document naming the embedding model of a concrete index's vectors. */
export const modelDocId = (concreteIndex: string): string => `model:${concreteIndex}`;
/** Meta document naming the version being built with the next model's vectors (a model change), per index it is built beside. */
export const nextModelDocId = (concreteIndex: string): string => `next-model:${concreteIndex}`;

/** A meta document about a model. */
export interface ModelDoc {
  index: string;
  modelId: string;
  dimensions: number;
}

/** Meta document holding the checkpoint of one concrete index (each version is fed from the log on its own). */
export const checkpointDocId = (concreteIndex: string): string => `checkpoint:${concreteIndex}`;

/** Filter clauses shared by the BM25 query, the kNN query and counts. */
export function filterClauses(filters: SearchFilters): estypes.QueryDslQueryContainer[] {
  const out: estypes.QueryDslQueryContainer[] = [{ term: { workspaceId: filters.workspaceId } }];
  if (filters.tags !== undefined) out.push({ terms: { tags: filters.tags } });
  if (filters.purpose !== undefined) out.push({ term: { purpose: filters.purpose } });
  if (filters.documentIds !== undefined) out.push({ terms: { documentId: filters.documentIds } });
  return out;
}

export const SOURCE_WITHOUT_VECTOR: estypes.SearchSourceConfig = { excludes: ['vector'] };

/** BM25 over content and title as one combined field (BM25F, like the embedded FTS5 table), filtered. */
export function bm25SearchBody(text: string, filters: SearchFilters, size: number, titleWeight = 1): estypes.SearchRequest {
  return {
    size,
    track_total_hits: false,
    _source: SOURCE_WITHOUT_VECTOR,
    query: {
      bool: {
        must: [{ combined_fields: { query: text, fields: ['content', `documentTitle^${Math.max(1, titleWeight)}`], operator: 'or' } }],
        filter: filterClauses(filters),
      },
    },
  };
}

/** Approximate kNN over the HNSW graph with the same filters applied during the graph search. */
export function knnSearchBody(vector: number[], filters: SearchFilters, k: number): estypes.SearchRequest {
  return {
    size: k,
    _source: SOURCE_WITHOUT_VECTOR,
    knn: { field: 'vector', query_vector: vector, k, num_candidates: Math.min(10000, Math.max(100, k * 2)), filter: filterClauses(filters) },
  };
}

/** Exact cosine of the query with each listed chunk (for candidates only one retriever found). */
export function exactCosineBody(ids: string[], vector: number[]): estypes.SearchRequest {
  return {
    size: ids.length,
    _source: false,
    query: {
      script_score: {
        query: { ids: { values: ids } },
        // Scores must be non-negative: shift [-1, 1] to [0, 2].
        script: { source: "cosineSimilarity(params.q, 'vector') + 1.0", params: { q: vector } },
      },
    },
  };
}

export const cosineFromExactScore = (score: number): number => score - 1;

/** Chunks of a document are addressed `<documentId>:<chunkIndex>`, so an upsert overwrites in place. */
export const chunkDocId = (documentId: string, chunkIndex: number): string => `${documentId}:${chunkIndex}`;

/** Bulk operations indexing a document's chunks into `index`. */
export function bulkIndexOperations(index: string, documentId: string, chunks: IndexedChunk[]): (estypes.BulkOperationContainer | ChunkSource)[] {
  const ops: (estypes.BulkOperationContainer | ChunkSource)[] = [];
  chunks.forEach((c, i) => {
    if (c.documentId !== documentId) throw new Error(`chunk of ${c.documentId} upserted under ${documentId}`);
    const source: ChunkSource = {
      workspaceId: c.workspaceId,
      documentId,
      documentTitle: c.documentTitle,
      purpose: c.purpose,
      tags: c.tags,
      chunkIndex: c.chunkIndex,
      content: c.content,
      isFirst: i === 0,
    };
    if (c.vector.length > 0) {
      source.vector = Array.from(c.vector);
      if (c.model !== undefined) source.model = c.model;
    }
    if (c.page !== undefined) source.page = c.page;
    if (c.section !== undefined) source.section = c.section;
    ops.push({ index: { _index: index, _id: chunkDocId(documentId, c.chunkIndex) } }, source);
  });
  return ops;
}

/**
 * Bulk operations (action, source pairs) in requests of at most `maxBytes` of JSON each (a pair
 * larger than that alone goes in a request of its own): a document of thousands of chunks
 * would pass Elasticsearch's 100 MB `http.max_content_length` in one request.
 */
export function splitBulkOperations<T>(ops: T[], maxBytes: number): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (let i = 0; i < ops.length; i += 2) {
    const size = Buffer.byteLength(JSON.stringify(ops[i])) + Buffer.byteLength(JSON.stringify(ops[i + 1])) + 2;
    if (current.length > 0 && bytes + size > maxBytes) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(ops[i], ops[i + 1]);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** Query selecting the chunks of a document other than the ones just written. */
export function staleChunksQuery(documentId: string, keepIds: string[]): estypes.QueryDslQueryContainer {
  return { bool: { filter: [{ term: { documentId } }], must_not: keepIds.length ? [{ ids: { values: keepIds } }] : [] } };
}

/** Painless update of the filterable fields of a document's chunks. */
export function updateFieldsScript(fields: { documentTitle?: string; purpose?: string; tags?: string[] }): estypes.Script {
  const params: Record<string, unknown> = {};
  const lines: string[] = [];
  for (const key of ['documentTitle', 'purpose', 'tags'] as const) {
    if (fields[key] !== undefined) {
      params[key] = fields[key];
      lines.push(`ctx._source.${key} = params.${key};`);
    }
  }
  return { source: lines.join(' '), lang: 'painless', params };
}

/** Count of documents matching the filters: one `isFirst` chunk per document. */
export function countDocumentsQuery(filters: SearchFilters): estypes.QueryDslQueryContainer {
  return { bool: { filter: [...filterClauses(filters), { term: { isFirst: true } }] } };
}

/**
 * Lucene's BM25 (k1 = 1.2, b = 0.75) adds idf(t) · tf/(tf + k1 · norm) per query term,
 * with idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5)); each term stays below idf(t), so Σ idf
 * bounds the score. Dividing by it gives the [0, 1) "lexical" evidence hybrid.ts expects,
 * the same quantity the embedded index computes from FTS5's statistics.
 */
export function bm25UpperBound(terms: { docFreq: number }[], docCount: number): number {
  let sum = 0;
  for (const t of terms) sum += Math.log(1 + (docCount - t.docFreq + 0.5) / (t.docFreq + 0.5));
  return sum;
}

/** Term statistics of the analysed query, from a `_termvectors` response for an artificial document. */
export function queryTermStats(response: estypes.TermvectorsResponse, field = 'content'): { terms: { docFreq: number }[]; docCount: number } {
  const tv = response.term_vectors?.[field];
  if (!tv) return { terms: [], docCount: 0 };
  return {
    docCount: tv.field_statistics?.doc_count ?? 0,
    // A query term absent from the index cannot score, but still belongs to the query: df 0.
    terms: Object.values(tv.terms).map((t) => ({ docFreq: t.doc_freq ?? 0 })),
  };
}

/** Normalised lexical evidence of a BM25 hit. */
export function lexicalEvidence(score: number, bound: number): number {
  return bound > 0 ? Math.min(1, Math.max(0, score / bound)) : 0;
}

/** Atomic alias switch: both aliases move to `next` in one `_aliases` call. */
export function swapAliasActions(name: string, next: string): estypes.IndicesUpdateAliasesAction[] {
  return [
    { remove: { index: `${name}-v*`, alias: readAlias(name), must_exist: false } },
    { remove: { index: `${name}-v*`, alias: writeAlias(name), must_exist: false } },
    { add: { index: next, alias: readAlias(name) } },
    { add: { index: next, alias: writeAlias(name), is_write_index: true } },
  ];
}

/** Points only the write alias at `next`. No longer used by the adapter (a rebuild writes into its concrete index and both aliases move at the swap); kept for operators' scripts. */
export function moveWriteAliasActions(name: string, next: string): estypes.IndicesUpdateAliasesAction[] {
  return [
    { remove: { index: `${name}-v*`, alias: writeAlias(name), must_exist: false } },
    { add: { index: next, alias: writeAlias(name), is_write_index: true } },
  ];
}
