import { Client, errors } from '@elastic/elasticsearch';
import Mock from '@elastic/elasticsearch-mock';
import { ElasticsearchSearchIndex } from '../../src/adapters/elasticsearch/elasticsearchSearchIndex';
import { IndexedChunk, VectorModelChangedError } from '../../src/ports/searchIndex';

interface Req {
  method: string;
  path: string;
  querystring: Record<string, string>;
  body: any;
}

/**
 * A small Elasticsearch behind @elastic/elasticsearch-mock (the real client, only its
 * transport replaced): indices, aliases, documents, and the requests as sent. Like a real
 * 8+/9 server it refuses wildcard index deletion (action.destructive_requires_name).
 */
function fakeElasticsearch() {
  const indices = new Map<string, Map<string, any>>();
  const aliases = new Map<string, string>();
  const requests: Req[] = [];
  const notFound = () => new errors.ResponseError({ body: { error: { type: 'index_not_found_exception' }, status: 404 }, statusCode: 404, headers: {}, warnings: null, meta: {} as never });
  const matchNames = (pattern: string): string[] => {
    const out = new Set<string>();
    for (const p of pattern.split(',')) {
      if (aliases.has(p)) out.add(aliases.get(p) as string);
      else if (p.includes('*')) {
        const re = new RegExp(`^${p.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
        for (const n of indices.keys()) if (re.test(n)) out.add(n);
      } else if (indices.has(p)) out.add(p);
    }
    return [...out];
  };
  const matches = (doc: any, query: any): boolean => {
    if (!query) return true;
    if (query.term) return Object.entries(query.term).every(([k, v]) => doc[k] === v);
    if (query.bool) {
      const keep: string[] = query.bool.must_not?.[0]?.ids?.values ?? [];
      return query.bool.filter.every((f: any) => matches(doc, f)) && !keep.includes(doc._id);
    }
    return true;
  };
  const mock = new Mock();
  mock.add({ method: ['GET', 'HEAD', 'PUT', 'POST', 'DELETE'], path: '*' }, (params) => {
    const p = params as unknown as Req;
    const path = decodeURIComponent(p.path);
    requests.push({ ...p, path });
    const seg = path.split('/').filter(Boolean);
    if (p.method === 'POST' && seg[0] === '_aliases') {
      for (const a of p.body.actions) {
        if (a.remove) for (const n of matchNames(a.remove.index)) if (aliases.get(a.remove.alias) === n) aliases.delete(a.remove.alias);
        if (a.add) aliases.set(a.add.alias, a.add.index);
      }
      return { acknowledged: true };
    }
    if (seg[0] === '_alias') {
      const target = aliases.get(seg[1]);
      if (!target) return notFound();
      return p.method === 'HEAD' ? '' : { [target]: { aliases: { [seg[1]]: {} } } };
    }
    if (seg[0] === '_bulk') {
      const items = [];
      for (let i = 0; i < p.body.length; i += 2) {
        const { _index, _id } = p.body[i].index;
        indices.get(_index)?.set(_id, { ...p.body[i + 1], _id });
        items.push({ index: { _index, _id, status: 201 } });
      }
      return { errors: false, took: 1, items };
    }
    if (seg.length === 1) {
      const names = matchNames(seg[0]);
      if (p.method === 'HEAD') return names.length ? '' : notFound();
      if (p.method === 'PUT') {
        indices.set(seg[0], new Map());
        return { acknowledged: true, index: seg[0] };
      }
      if (p.method === 'DELETE') {
        if (seg[0].includes('*')) return new errors.ResponseError({ body: { error: { type: 'illegal_argument_exception', reason: 'Wildcard expressions or all indices are not allowed' }, status: 400 }, statusCode: 400, headers: {}, warnings: null, meta: {} as never });
        for (const n of seg[0].split(',')) indices.delete(n);
        return { acknowledged: true };
      }
      return Object.fromEntries(names.map((n) => [n, { aliases: {}, mappings: {}, settings: {} }]));
    }
    const names = matchNames(seg[0]);
    if (seg[1] === '_mapping') return p.method === 'GET' ? Object.fromEntries(names.map((n) => [n, { mappings: { properties: {} } }])) : { acknowledged: true };
    if (seg[1] === '_search') {
      // Like a real server: a kNN query of other dimensions than the field's is refused.
      const dims = names.flatMap((n) => [...(indices.get(n) ?? new Map()).values()]).find((d) => d.vector)?.vector.length;
      if (p.body.knn && dims !== undefined && p.body.knn.query_vector.length !== dims) {
        return new errors.ResponseError({ body: { error: { type: 'illegal_argument_exception', reason: 'dims differ' }, status: 400 }, statusCode: 400, headers: {}, warnings: null, meta: {} as never });
      }
      const hits = names
        .flatMap((n) => [...(indices.get(n) ?? new Map()).values()].filter((d) => matches(d, p.body.query)).map((d) => ({ _index: n, _id: d._id, _source: { ...d } })))
        .sort((a, b) => a._source.chunkIndex - b._source.chunkIndex)
        .filter((h) => p.body.search_after === undefined || h._source.chunkIndex > p.body.search_after[0]);
      for (const h of hits) for (const f of p.body._source?.excludes ?? []) delete h._source[f];
      return { took: 1, timed_out: false, hits: { total: { value: hits.length, relation: 'eq' }, hits: hits.slice(0, p.body.size ?? 10) } };
    }
    if (seg[1] === '_doc') {
      const docs = indices.get(seg[0]) ?? new Map();
      if (p.method === 'DELETE') return docs.delete(seg[2]) ? { result: 'deleted' } : new errors.ResponseError({ body: { result: 'not_found' }, statusCode: 404, headers: {}, warnings: null, meta: {} as never });
      if (p.method === 'GET') return docs.has(seg[2]) ? { _index: seg[0], _id: seg[2], found: true, _source: docs.get(seg[2]) } : new errors.ResponseError({ body: { found: false }, statusCode: 404, headers: {}, warnings: null, meta: {} as never });
      docs.set(seg[2], p.body);
      return { result: 'created', _id: seg[2] };
    }
    if (seg[1] === '_delete_by_query') {
      let deleted = 0;
      for (const n of names) for (const [id, doc] of indices.get(n) ?? []) if (matches(doc, p.body.query) && indices.get(n)?.delete(id)) deleted++;
      return { deleted };
    }
    if (seg[1] === '_count') {
      const [n] = names;
      return { count: new Set([...(indices.get(n) ?? new Map()).values()].filter((d) => d.workspaceId === p.body?.query?.bool?.filter?.[0]?.term?.workspaceId || true).map((d) => d.documentId)).size };
    }
    if (seg[1] === '_update_by_query') return { updated: 0 };
    return new errors.ResponseError({ body: { error: `unexpected ${p.method} ${path}` }, statusCode: 400, headers: {}, warnings: null, meta: {} as never });
  });
  const client = new Client({ node: 'http://localhost:9200', Connection: mock.getConnection() });
  return { client, indices, aliases, requests };
}

const chunk = (documentId: string, chunkIndex = 0, dims = 4): IndexedChunk => ({
  workspaceId: 'w',
  documentId,
  documentTitle: 'T',
  purpose: 'KNOWLEDGE',
  tags: [],
  chunkIndex,
  content: `content of ${documentId} ${chunkIndex}`,
  vector: Array.from({ length: dims }, (_, i) => (i === 0 ? 1 : 0)),
});

describe('ElasticsearchSearchIndex through the real client (elasticsearch-mock transport)', () => {
  it('creates indices with the configured replicas; writes wait for a refresh instead of forcing one', async () => {
    const es = fakeElasticsearch();
    const index = await ElasticsearchSearchIndex.create({ client: es.client, name: 'kb', dimensions: 4, replicas: 2 });
    const creates = es.requests.filter((r) => r.method === 'PUT' && r.path.split('/').length === 2);
    expect(creates.map((r) => [r.path, r.body.settings.number_of_replicas])).toEqual([
      ['/kb-meta', 2],
      ['/kb-v1', 2],
    ]);
    await index.upsertDocument('d1', [chunk('d1')]);
    await index.setCheckpoint(3);
    const bulk = es.requests.find((r) => r.path === '/_bulk');
    expect(bulk?.querystring.refresh).toBe('wait_for');
    expect(es.requests.find((r) => r.path.includes('/_doc/') && r.method !== 'GET')?.querystring.refresh).toBe('wait_for');
  });

  it('splits a large document into bulk requests under the byte limit', async () => {
    const es = fakeElasticsearch();
    const index = await ElasticsearchSearchIndex.create({ client: es.client, name: 'kb', dimensions: 256, maxBulkBytes: 64 * 1024 });
    const chunks = Array.from({ length: 300 }, (_, i) => chunk('d1', i, 256));
    await index.upsertDocument('d1', chunks);
    const bulks = es.requests.filter((r) => r.path === '/_bulk');
    expect(bulks.length).toBeGreaterThanOrEqual(3);
    for (const b of bulks) expect(Buffer.byteLength(b.body.map((l: unknown) => JSON.stringify(l)).join('\n'))).toBeLessThanOrEqual(64 * 1024);
    expect(bulks.reduce((n, b) => n + b.body.length / 2, 0)).toBe(300);
    expect(es.indices.get('kb-v1')?.size).toBe(300);
  });

  it('dropAll lists the versions and deletes them by name (the server refuses wildcard deletes)', async () => {
    const es = fakeElasticsearch();
    const index = await ElasticsearchSearchIndex.create({ client: es.client, name: 'kb', dimensions: 4 });
    await index.startNewIndex();
    await index.dropAll();
    const del = es.requests.filter((r) => r.method === 'DELETE');
    expect(del.map((r) => r.path)).toEqual(['/kb-v1,kb-v2,kb-meta']);
    expect(del.every((r) => !r.path.includes('*'))).toBe(true);
    expect([...es.indices.keys()]).toEqual([]);
  });

  it('a rebuild fills the new version with its own checkpoint from 0; aliases move only at the swap, once it has caught up', async () => {
    const es = fakeElasticsearch();
    const live = await ElasticsearchSearchIndex.create({ client: es.client, name: 'kb', dimensions: 4 });
    await live.upsertDocument('d1', [chunk('d1')]);
    await live.setCheckpoint(10);

    const next = await live.startNewIndex(8);
    expect(next).toBe('kb-v2');
    // Nothing moved: the running projector keeps writing v1 and keeps its checkpoint.
    expect(Object.fromEntries(es.aliases)).toEqual({ kb: 'kb-v1', 'kb-write': 'kb-v1' });
    expect(await live.getCheckpoint()).toBe(10);
    await live.upsertDocument('d2', [chunk('d2')]);
    await live.setCheckpoint(11);
    expect([...(es.indices.get('kb-v1')?.keys() ?? [])]).toEqual(['d1:0', 'd2:0']);

    // The rebuild's own projection writes into kb-v2, from its own checkpoint 0.
    const rebuild = live.rebuildInto(next, 8);
    expect(await rebuild.getCheckpoint()).toBe(0);
    await rebuild.upsertDocument('d1', [chunk('d1', 0, 8)]);
    await rebuild.setCheckpoint(5);
    expect([...(es.indices.get('kb-v2')?.keys() ?? [])]).toEqual(['d1:0']);
    expect(await live.getCheckpoint()).toBe(11);

    // Not caught up: refused, nothing moved.
    await expect(live.swapToNewIndex(8)).rejects.toThrow(/kb-v2 has reached position 5, the live index kb-v1 is at 11/);
    expect(es.aliases.get('kb')).toBe('kb-v1');

    await rebuild.upsertDocument('d2', [chunk('d2', 0, 8)]);
    await rebuild.setCheckpoint(11);
    expect(await live.swapToNewIndex(8)).toBe('kb-v2');
    expect(Object.fromEntries(es.aliases)).toEqual({ kb: 'kb-v2', 'kb-write': 'kb-v2' });
    expect(es.indices.has('kb-v1')).toBe(false);
    // The live projector goes on from the rebuild's checkpoint.
    expect(await live.getCheckpoint()).toBe(11);
  });

  it('swap with no rebuild under way is refused: no empty index, reads stay where they are', async () => {
    const es = fakeElasticsearch();
    const live = await ElasticsearchSearchIndex.create({ client: es.client, name: 'kb', dimensions: 4 });
    await live.upsertDocument('d1', [chunk('d1')]);
    const before = es.requests.length;
    await expect(live.swapToNewIndex()).rejects.toThrow(/no rebuild of kb under way/);
    expect(es.requests.slice(before).filter((r) => r.method !== 'GET' && r.method !== 'HEAD')).toEqual([]);
    expect([...es.indices.keys()].sort()).toEqual(['kb-meta', 'kb-v1']);
  });

  it('erasure during a rebuild deletes in the read index and in the rebuild', async () => {
    const es = fakeElasticsearch();
    const live = await ElasticsearchSearchIndex.create({ client: es.client, name: 'kb', dimensions: 4 });
    await live.upsertDocument('d1', [chunk('d1')]);
    await live.upsertDocument('d2', [chunk('d2')]);
    const rebuild = live.rebuildInto(await live.startNewIndex());
    await rebuild.upsertDocument('d1', [chunk('d1')]);
    await live.deleteDocument('d1');
    expect([...(es.indices.get('kb-v1')?.keys() ?? [])]).toEqual(['d2:0']);
    expect([...(es.indices.get('kb-v2')?.keys() ?? [])]).toEqual([]);
    await live.deleteWorkspace('w');
    expect(es.indices.get('kb-v1')?.size).toBe(0);
  });

  it('a model change builds a new version beside the live one; the switch moves both aliases at once and deletes the old vectors', async () => {
    const es = fakeElasticsearch();
    const index = await ElasticsearchSearchIndex.create({ client: es.client, name: 'kb', dimensions: 4, model: 'A' });
    expect(await index.vectorModels()).toEqual({ documents: 0 });
    await index.upsertDocument('d1', [{ ...chunk('d1'), model: 'A' }]);
    await index.upsertDocument('d2', [{ ...chunk('d2'), model: 'A' }]);
    expect(await index.vectorModels()).toEqual({ active: { modelId: 'A', dimensions: 4 }, documents: 2 });
    expect(es.indices.get('kb-v1')?.get('d1:0')).toMatchObject({ model: 'A', vector: [1, 0, 0, 0] });

    await index.beginVectorModel({ modelId: 'B', dimensions: 8 });
    await index.beginVectorModel({ modelId: 'B', dimensions: 8 }); // a replay: nothing new
    expect(es.requests.filter((r) => r.method === 'PUT' && r.path === '/kb-v2').map((r) => r.body.mappings.properties.vector.dims)).toEqual([8]);
    expect(Object.fromEntries(es.aliases)).toEqual({ kb: 'kb-v1', 'kb-write': 'kb-v1' });
    const b = (axis: number): number[] => Array.from({ length: 8 }, (_, i) => (i === axis ? 1 : 0));
    await index.putVectors('d1', 'B', [{ chunkIndex: 0, vector: b(3) }]);
    expect(es.indices.get('kb-v2')?.get('d1:0')).toMatchObject({ documentId: 'd1', content: 'content of d1 0', model: 'B', vector: b(3) });
    expect((await index.vectorModels()).next).toEqual({ modelId: 'B', dimensions: 8, documents: 1 });
    // A document verified during the change: the old vectors to the live version, the new ones to the next.
    await index.upsertDocument('d3', [{ ...chunk('d3'), model: 'A', next: { model: 'B', vector: b(5) } }]);
    expect(es.indices.get('kb-v1')?.get('d3:0')?.vector).toEqual([1, 0, 0, 0]);
    expect(es.indices.get('kb-v2')?.get('d3:0')?.vector).toEqual(b(5));
    // One verified with the old model only is copied without a vector (BM25 after the switch, until it gets one).
    await index.upsertDocument('d4', [{ ...chunk('d4'), model: 'A' }]);
    expect(es.indices.get('kb-v2')?.get('d4:0')).toMatchObject({ documentId: 'd4', content: 'content of d4 0' });
    expect(es.indices.get('kb-v2')?.get('d4:0')?.vector).toBeUndefined();
    await index.putVectors('d2', 'B', [{ chunkIndex: 0, vector: b(4) }]);
    await index.setCheckpoint(42);
    // Searches still answer from A: a query embedded with B is refused, before any search request.
    await expect(index.search({ text: 'x', vector: b(1), filters: { workspaceId: 'w' }, k: 1, vectorModel: 'B' })).rejects.toBeInstanceOf(VectorModelChangedError);

    const before = es.requests.length;
    await index.switchVectorModel({ modelId: 'B', dimensions: 8 });
    const aliasCalls = es.requests.slice(before).filter((r) => r.path === '/_aliases');
    expect(aliasCalls).toHaveLength(1);
    expect(aliasCalls[0].body.actions.filter((a: { add?: unknown }) => a.add)).toEqual([{ add: { index: 'kb-v2', alias: 'kb' } }, { add: { index: 'kb-v2', alias: 'kb-write', is_write_index: true } }]);
    expect(Object.fromEntries(es.aliases)).toEqual({ kb: 'kb-v2', 'kb-write': 'kb-v2' });
    expect(es.indices.has('kb-v1')).toBe(false);
    expect(await index.getCheckpoint()).toBe(42);
    expect(await index.vectorModels()).toEqual({ active: { modelId: 'B', dimensions: 8 }, documents: 4 });
    await index.switchVectorModel({ modelId: 'B', dimensions: 8 }); // a replay: nothing moves
    expect(Object.fromEntries(es.aliases)).toEqual({ kb: 'kb-v2', 'kb-write': 'kb-v2' });
    await expect(index.search({ text: 'x', vector: [1, 0, 0, 0], filters: { workspaceId: 'w' }, k: 1, vectorModel: 'A' })).rejects.toBeInstanceOf(VectorModelChangedError);
  });

  it('a cancelled model change deletes the version being built; reads and writes never left the live one', async () => {
    const es = fakeElasticsearch();
    const index = await ElasticsearchSearchIndex.create({ client: es.client, name: 'kb', dimensions: 4, model: 'A' });
    await index.upsertDocument('d1', [{ ...chunk('d1'), model: 'A' }]);
    await index.beginVectorModel({ modelId: 'B', dimensions: 8 });
    await index.putVectors('d1', 'B', [{ chunkIndex: 0, vector: [1, 0, 0, 0, 0, 0, 0, 0] }]);
    await index.dropVectorModel('B');
    expect(es.indices.has('kb-v2')).toBe(false);
    expect(Object.fromEntries(es.aliases)).toEqual({ kb: 'kb-v1', 'kb-write': 'kb-v1' });
    expect(await index.vectorModels()).toEqual({ active: { modelId: 'A', dimensions: 4 }, documents: 1 });
    // Vectors of a model neither active nor being built are ignored.
    const writes = es.requests.length;
    await index.putVectors('d1', 'B', [{ chunkIndex: 0, vector: [1, 0, 0, 0, 0, 0, 0, 0] }]);
    expect(es.requests.slice(writes).filter((r) => r.path === '/_bulk')).toEqual([]);
  });

  it('an index written before models were recorded is named after the configured model when the dimensions match', async () => {
    const es = fakeElasticsearch();
    const old = await ElasticsearchSearchIndex.create({ client: es.client, name: 'kb', dimensions: 4 });
    await old.upsertDocument('d1', [chunk('d1')]);
    es.indices.get('kb-meta')?.delete('model:kb-v1');
    const index = await ElasticsearchSearchIndex.create({ client: es.client, name: 'kb', dimensions: 4, model: 'local:glove-sif-100d' });
    expect((await index.vectorModels()).active).toEqual({ modelId: 'local:glove-sif-100d', dimensions: 4 });
  });

  it('a process that trusts a stale model learns of another process\'s switch when the server refuses its query', async () => {
    const es = fakeElasticsearch();
    const projector = await ElasticsearchSearchIndex.create({ client: es.client, name: 'kb', dimensions: 4, model: 'A' });
    const api = await ElasticsearchSearchIndex.create({ client: es.client, name: 'kb', dimensions: 4, model: 'A', modelCacheMs: 3_600_000 });
    await projector.upsertDocument('d1', [{ ...chunk('d1'), model: 'A' }]);
    expect((await api.vectorModels()).active?.modelId).toBe('A');
    await projector.beginVectorModel({ modelId: 'B', dimensions: 8 });
    await projector.putVectors('d1', 'B', [{ chunkIndex: 0, vector: [0, 1, 0, 0, 0, 0, 0, 0] }]);
    await projector.switchVectorModel({ modelId: 'B', dimensions: 8 });
    await expect(api.search({ text: '', vector: [1, 0, 0, 0], filters: { workspaceId: 'w' }, k: 1, mode: 'dense', vectorModel: 'A' })).rejects.toBeInstanceOf(VectorModelChangedError);
    expect((await api.vectorModels()).active).toEqual({ modelId: 'B', dimensions: 8 });
  });
});
