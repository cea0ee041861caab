import {
  bm25SearchBody,
  bm25UpperBound,
  bulkIndexOperations,
  checkpointDocId,
  chunkIndexBody,
  cosineFromExactScore,
  countDocumentsQuery,
  exactCosineBody,
  filterClauses,
  knnSearchBody,
  lexicalEvidence,
  moveWriteAliasActions,
  parseIndexVersion,
  queryTermStats,
  staleChunksQuery,
  swapAliasActions,
  updateFieldsScript,
  versionedIndexName,
} from '../../src/adapters/elasticsearch/elasticsearchQueries';
import type { IndexedChunk } from '../../src/ports/searchIndex';

const filters = { workspaceId: 'w1', tags: ['t1', 't2'], purpose: 'KNOWLEDGE' as const, documentIds: ['d1'] };

describe('index naming', () => {
  it('versions indexes and parses versions back', () => {
    expect(versionedIndexName('kb-chunks', 3)).toBe('kb-chunks-v3');
    expect(parseIndexVersion('kb-chunks', 'kb-chunks-v12')).toBe(12);
    expect(parseIndexVersion('kb-chunks', 'kb-chunks-meta')).toBeNull();
    expect(parseIndexVersion('kb-chunks', 'kb-chunks-v0')).toBeNull();
    expect(parseIndexVersion('kb-chunks', 'kb-chunks-v2x')).toBeNull();
    expect(checkpointDocId('kb-chunks-v2')).toBe('checkpoint:kb-chunks-v2');
  });
});

describe('mapping', () => {
  it('has a cosine HNSW dense_vector of the model dimensions, english text and keyword filters', () => {
    const body = chunkIndexBody(384);
    const p = body.mappings.properties!;
    expect(p.vector).toMatchObject({ type: 'dense_vector', dims: 384, index: true, similarity: 'cosine', index_options: { type: 'hnsw' } });
    expect(p.content).toEqual({ type: 'text', analyzer: 'english' });
    expect(p.documentTitle).toEqual({ type: 'text', analyzer: 'english' });
    for (const f of ['workspaceId', 'documentId', 'tags', 'purpose']) expect(p[f]).toEqual({ type: 'keyword' });
    expect(body.settings.number_of_shards).toBe(1);
    expect(body.mappings.dynamic).toBe('strict');
    expect(() => chunkIndexBody(0)).toThrow(RangeError);
  });
});

describe('queries', () => {
  it('builds one filter per given field, workspace always', () => {
    expect(filterClauses({ workspaceId: 'w' })).toEqual([{ term: { workspaceId: 'w' } }]);
    expect(filterClauses(filters)).toEqual([
      { term: { workspaceId: 'w1' } },
      { terms: { tags: ['t1', 't2'] } },
      { term: { purpose: 'KNOWLEDGE' } },
      { terms: { documentId: ['d1'] } },
    ]);
    // An empty list filters everything out, as in the embedded index.
    expect(filterClauses({ workspaceId: 'w', tags: [] })).toContainEqual({ terms: { tags: [] } });
  });

  it('applies the same filters to BM25, kNN and counts', () => {
    const bm25 = bm25SearchBody('rocket fuel', filters, 100, 2);
    expect(bm25.size).toBe(100);
    expect(bm25.query?.bool?.must).toEqual([{ combined_fields: { query: 'rocket fuel', fields: ['content', 'documentTitle^2'], operator: 'or' } }]);
    expect(bm25.query?.bool?.filter).toEqual(filterClauses(filters));
    expect(bm25._source).toEqual({ excludes: ['vector'] });

    const knn = knnSearchBody([0.1, 0.2], filters, 30);
    expect(knn.knn).toEqual({ field: 'vector', query_vector: [0.1, 0.2], k: 30, num_candidates: 100, filter: filterClauses(filters) });
    expect(knnSearchBody([1], filters, 400).knn).toMatchObject({ k: 400, num_candidates: 800 });

    expect(countDocumentsQuery(filters)).toEqual({ bool: { filter: [...filterClauses(filters), { term: { isFirst: true } }] } });
  });

  it('scores candidates by exact cosine shifted to non-negative', () => {
    const body = exactCosineBody(['d1:0', 'd2:3'], [1, 0]);
    expect(body.size).toBe(2);
    expect(body.query?.script_score?.query).toEqual({ ids: { values: ['d1:0', 'd2:3'] } });
    expect(body.query?.script_score?.script).toEqual({ source: "cosineSimilarity(params.q, 'vector') + 1.0", params: { q: [1, 0] } });
    expect(cosineFromExactScore(1.75)).toBeCloseTo(0.75);
    expect(cosineFromExactScore(0)).toBe(-1);
  });
});

describe('lexical normalisation', () => {
  it('bounds BM25 by the sum of Lucene idfs', () => {
    // N = 10 docs; df 1 and df 9.
    const bound = bm25UpperBound([{ docFreq: 1 }, { docFreq: 9 }], 10);
    expect(bound).toBeCloseTo(Math.log(1 + 9.5 / 1.5) + Math.log(1 + 1.5 / 9.5), 10);
    expect(bm25UpperBound([], 10)).toBe(0);
    expect(lexicalEvidence(bound / 2, bound)).toBeCloseTo(0.5);
    expect(lexicalEvidence(5, 0)).toBe(0);
    expect(lexicalEvidence(bound * 2, bound)).toBe(1);
  });

  it('reads term statistics of the analysed query from a termvectors response', () => {
    const stats = queryTermStats({
      found: true,
      _index: 'kb-v1',
      took: 1,
      _version: 0,
      term_vectors: {
        content: {
          field_statistics: { doc_count: 42, sum_doc_freq: 100, sum_ttf: 120 },
          terms: { rocket: { term_freq: 1, doc_freq: 3 }, unseen: { term_freq: 1 } },
        },
      },
    });
    expect(stats).toEqual({ docCount: 42, terms: [{ docFreq: 3 }, { docFreq: 0 }] });
    expect(queryTermStats({ found: false, _index: 'x', took: 0, _version: 0 })).toEqual({ terms: [], docCount: 0 });
  });
});

describe('writes', () => {
  const chunk = (i: number, extra: Partial<IndexedChunk> = {}): IndexedChunk => ({
    workspaceId: 'w1', documentId: 'd1', documentTitle: 'Doc', purpose: 'KNOWLEDGE', tags: ['t'], chunkIndex: i, content: `c${i}`, vector: new Float32Array([i, 1]), ...extra,
  });

  it('indexes chunks under stable ids, marking the first one, with plain-number vectors', () => {
    const ops = bulkIndexOperations('kb-v2', 'd1', [chunk(0, { page: 1, section: 'Intro' }), chunk(1)]);
    expect(ops).toEqual([
      { index: { _index: 'kb-v2', _id: 'd1:0' } },
      { workspaceId: 'w1', documentId: 'd1', documentTitle: 'Doc', purpose: 'KNOWLEDGE', tags: ['t'], chunkIndex: 0, content: 'c0', isFirst: true, vector: [0, 1], page: 1, section: 'Intro' },
      { index: { _index: 'kb-v2', _id: 'd1:1' } },
      { workspaceId: 'w1', documentId: 'd1', documentTitle: 'Doc', purpose: 'KNOWLEDGE', tags: ['t'], chunkIndex: 1, content: 'c1', isFirst: false, vector: [1, 1] },
    ]);
    expect(() => bulkIndexOperations('kb-v2', 'd2', [chunk(0)])).toThrow(/upserted under/);
  });

  it('deletes only chunks that were not rewritten', () => {
    expect(staleChunksQuery('d1', ['d1:0'])).toEqual({ bool: { filter: [{ term: { documentId: 'd1' } }], must_not: [{ ids: { values: ['d1:0'] } }] } });
    expect(staleChunksQuery('d1', [])).toEqual({ bool: { filter: [{ term: { documentId: 'd1' } }], must_not: [] } });
  });

  it('updates only the fields given, through params', () => {
    expect(updateFieldsScript({ tags: ['a'], purpose: 'INSTRUCTION' })).toEqual({
      source: 'ctx._source.purpose = params.purpose; ctx._source.tags = params.tags;',
      lang: 'painless',
      params: { purpose: 'INSTRUCTION', tags: ['a'] },
    });
    expect(updateFieldsScript({ documentTitle: "x'; drop" }).params).toEqual({ documentTitle: "x'; drop" });
    expect(updateFieldsScript({}).source).toBe('');
  });
});

describe('aliases', () => {
  it('swaps both aliases to the new version in one request', () => {
    expect(swapAliasActions('kb', 'kb-v2')).toEqual([
      { remove: { index: 'kb-v*', alias: 'kb', must_exist: false } },
      { remove: { index: 'kb-v*', alias: 'kb-write', must_exist: false } },
      { add: { index: 'kb-v2', alias: 'kb' } },
      { add: { index: 'kb-v2', alias: 'kb-write', is_write_index: true } },
    ]);
    expect(moveWriteAliasActions('kb', 'kb-v3')).toEqual([
      { remove: { index: 'kb-v*', alias: 'kb-write', must_exist: false } },
      { add: { index: 'kb-v3', alias: 'kb-write', is_write_index: true } },
    ]);
  });
});
