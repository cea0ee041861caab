import { randomUUID } from 'node:crypto';
import { ElasticsearchSearchIndex } from '../../src/adapters/elasticsearch/elasticsearchSearchIndex';
import { searchIndexContract } from './searchIndex.contract';

const node = process.env.KB_TEST_ELASTICSEARCH_URL;

if (node) {
  const created: ElasticsearchSearchIndex[] = [];
  afterAll(async () => {
    for (const index of created) {
      await index.dropAll();
      await index.close();
    }
  });
  // The contract suite uses 16-dimensional vectors.
  searchIndexContract('ElasticsearchSearchIndex', async () => {
    const name = `kb-test-${randomUUID().slice(0, 8)}`;
    created.push(new ElasticsearchSearchIndex({ node, name, dimensions: 16 }));
    return ElasticsearchSearchIndex.create({ node, name, dimensions: 16 });
  });

  describe('ElasticsearchSearchIndex rebuild and aliases (real server)', () => {
    it('rebuilds into a new version with its own checkpoint, refuses an early swap, swaps with no gap in reads', async () => {
      const name = `kb-test-${randomUUID().slice(0, 8)}`;
      const index = await ElasticsearchSearchIndex.create({ node, name, dimensions: 4 });
      created.push(index);
      const chunk = { workspaceId: 'w', documentId: 'd1', documentTitle: 'Old', purpose: 'KNOWLEDGE' as const, tags: [], chunkIndex: 0, content: 'old content', vector: [1, 0, 0, 0] };
      await index.upsertDocument('d1', [chunk]);
      await index.setCheckpoint(10);
      await expect(index.swapToNewIndex()).rejects.toThrow(/no rebuild/);
      const next = await index.startNewIndex(8);
      expect(next).toBe(`${name}-v2`);
      expect(await index.getCheckpoint()).toBe(10); // the live projector is not disturbed
      const rebuild = index.rebuildInto(next, 8);
      expect(await rebuild.getCheckpoint()).toBe(0); // the new version is fed from the start
      await rebuild.upsertDocument('d2', [{ ...chunk, documentId: 'd2', vector: [0, 1, 0, 0, 0, 0, 0, 0] }]);
      await rebuild.upsertDocument('d3', [{ ...chunk, documentId: 'd3', vector: [0, 0, 1, 0, 0, 0, 0, 0] }]);
      await rebuild.setCheckpoint(9);
      expect(await index.countDocuments({ workspaceId: 'w' })).toBe(1); // reads still on v1
      await expect(index.swapToNewIndex(8)).rejects.toThrow(/catch up/);
      // Erasure during the rebuild: gone from both versions.
      await index.deleteDocument('d3');
      expect(await rebuild.countDocuments({ workspaceId: 'w' })).toBe(1);
      await rebuild.setCheckpoint(10);
      expect(await index.swapToNewIndex(8)).toBe(`${name}-v2`);
      const hits = await index.search({ text: 'old content', filters: { workspaceId: 'w' }, k: 5, mode: 'bm25' });
      expect(hits.map((h) => h.documentId)).toEqual(['d2']);
      expect(await index.getCheckpoint()).toBe(10);
    });

    it('dropAll works with destructive_requires_name (the 8+/9 default)', async () => {
      const name = `kb-test-${randomUUID().slice(0, 8)}`;
      const index = await ElasticsearchSearchIndex.create({ node, name, dimensions: 4 });
      await index.startNewIndex();
      await index.dropAll();
      await index.close();
    });
  });
} else {
  describe.skip('SearchIndex contract: ElasticsearchSearchIndex (skipped: set KB_TEST_ELASTICSEARCH_URL, e.g. http://localhost:9200)', () => {
    it('needs a server', () => undefined);
  });
}
