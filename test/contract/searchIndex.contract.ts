import { type IndexedChunk, type Purpose, type SearchIndex, VectorModelChangedError } from '../../src/ports/searchIndex';

const DIMS = 16;

/** Deterministic unit vector along axis `axis`, slightly mixed with `mix`. */
function vec(axis: number, mix = -1, weight = 0.3): number[] {
  const v = new Array<number>(DIMS).fill(0);
  v[axis % DIMS] = 1;
  if (mix >= 0) v[mix % DIMS] += weight;
  return v;
}

interface ChunkSpec {
  content: string;
  vector: number[];
  page?: number;
  section?: string;
}

function doc(
  workspaceId: string,
  documentId: string,
  title: string,
  chunks: ChunkSpec[],
  opts: { purpose?: Purpose; tags?: string[] } = {},
): IndexedChunk[] {
  return chunks.map((c, i) => ({
    workspaceId,
    documentId,
    documentTitle: title,
    purpose: opts.purpose ?? 'KNOWLEDGE',
    tags: opts.tags ?? [],
    chunkIndex: i,
    content: c.content,
    vector: c.vector,
    page: c.page,
    section: c.section,
  }));
}

/**
 * Behaviour every SearchIndex adapter must show. `makeIndex` returns a fresh, empty index;
 * the suite closes it after each test.
 */
export function searchIndexContract(name: string, makeIndex: () => Promise<SearchIndex>): void {
  describe(`SearchIndex contract: ${name}`, () => {
    let index: SearchIndex;

    beforeEach(async () => {
      index = await makeIndex();
    });
    afterEach(async () => {
      await index.close();
    });

    async function seed(): Promise<void> {
      await index.upsertDocument(
        'd-rocket',
        doc('ws1', 'd-rocket', 'Rocket engines', [
          { content: 'Liquid rocket engines burn propellant in a combustion chamber.', vector: vec(0), page: 1, section: 'Intro' },
          { content: 'Nozzle expansion ratio determines exhaust velocity.', vector: vec(1), page: 2 },
        ], { tags: ['t-space', 't-eng'] }),
      );
      await index.upsertDocument(
        'd-garden',
        doc('ws1', 'd-garden', 'Gardening basics', [
          { content: 'Tomatoes need sunlight, water and well drained soil.', vector: vec(2) },
        ], { tags: ['t-home'] }),
      );
      await index.upsertDocument(
        'd-style',
        doc('ws1', 'd-style', 'Writing style guide', [
          { content: 'Always answer in short sentences and cite the rocket manual.', vector: vec(3) },
        ], { purpose: 'INSTRUCTION', tags: ['t-eng'] }),
      );
      await index.upsertDocument(
        'd-other',
        doc('ws2', 'd-other', 'Rocket engines (other workspace)', [
          { content: 'Liquid rocket engines burn propellant in a combustion chamber.', vector: vec(0) },
        ]),
      );
    }

    const ids = (hits: { documentId: string }[]): string[] => [...new Set(hits.map((h) => h.documentId))].sort();

    it('finds chunks by text (bm25) and by vector (dense), with metadata', async () => {
      await seed();
      const bm25 = await index.search({ text: 'combustion chamber', filters: { workspaceId: 'ws1' }, k: 5, mode: 'bm25' });
      expect(bm25[0]).toMatchObject({
        documentId: 'd-rocket',
        documentTitle: 'Rocket engines',
        chunkIndex: 0,
        page: 1,
        section: 'Intro',
        purpose: 'KNOWLEDGE',
      });
      expect(bm25[0].tags.sort()).toEqual(['t-eng', 't-space']);
      expect(bm25[0].content).toContain('combustion chamber');
      expect(ids(bm25)).toEqual(['d-rocket']);

      const dense = await index.search({ text: '', vector: vec(2), filters: { workspaceId: 'ws1' }, k: 1, mode: 'dense' });
      expect(dense).toHaveLength(1);
      expect(dense[0].documentId).toBe('d-garden');
      expect(dense[0].page).toBeUndefined();

      const hybrid = await index.search({ text: 'nozzle exhaust', vector: vec(1), filters: { workspaceId: 'ws1' }, k: 3 });
      expect(hybrid[0]).toMatchObject({ documentId: 'd-rocket', chunkIndex: 1 });
    });

    it('returns at most k hits with scores in [0, 1], highest first', async () => {
      await seed();
      for (const mode of ['hybrid', 'bm25', 'dense'] as const) {
        for (const k of [1, 2, 10]) {
          const hits = await index.search({ text: 'rocket engines soil sentences', vector: vec(0, 2, 0.8), filters: { workspaceId: 'ws1' }, k, mode });
          expect(hits.length).toBeGreaterThan(0);
          expect(hits.length).toBeLessThanOrEqual(k);
          for (const h of hits) {
            expect(h.score).toBeGreaterThanOrEqual(0);
            expect(h.score).toBeLessThanOrEqual(1);
          }
          for (let i = 1; i < hits.length; i++) expect(hits[i].score).toBeLessThanOrEqual(hits[i - 1].score);
        }
      }
      const all = await index.search({ text: 'zzz', vector: vec(5), filters: { workspaceId: 'ws1' }, k: 10, mode: 'dense' });
      expect(all).toHaveLength(4); // every chunk of ws1
    });

    it('scores an exact match higher than a weak one', async () => {
      await seed();
      const hits = await index.search({
        text: 'liquid rocket engines burn propellant in a combustion chamber',
        vector: vec(0),
        filters: { workspaceId: 'ws1' },
        k: 4,
      });
      expect(hits[0]).toMatchObject({ documentId: 'd-rocket', chunkIndex: 0 });
      expect(hits[0].score).toBeGreaterThan(0.7);
      expect(hits[hits.length - 1].score).toBeLessThan(hits[0].score);
    });

    it('isolates workspaces', async () => {
      await seed();
      const ws2 = await index.search({ text: 'rocket', vector: vec(0), filters: { workspaceId: 'ws2' }, k: 10 });
      expect(ids(ws2)).toEqual(['d-other']);
      const none = await index.search({ text: 'rocket', vector: vec(0), filters: { workspaceId: 'ws-unknown' }, k: 10 });
      expect(none).toEqual([]);
      expect(await index.countDocuments({ workspaceId: 'ws2' })).toBe(1);
      expect(await index.countDocuments({ workspaceId: 'ws-unknown' })).toBe(0);
    });

    it('returns a small workspace its k hits when a large workspace matches better', async () => {
      // The large workspace's chunks are all closer to the query, in text and in vector, and
      // are written before, between and after the small workspace's.
      const big = (i: number): IndexedChunk[] =>
        doc('ws-big', `big-${i}`, 'Turbulent boundary layer', [
          { content: `turbulent boundary layer separation on a swept wing, case ${i}`, vector: vec(3, i % DIMS, 0.2) },
          { content: `boundary layer transition and turbulent skin friction, case ${i}`, vector: vec(3, (i + 1) % DIMS, 0.2) },
        ]);
      let b = 0;
      for (; b < 150; b++) await index.upsertDocument(`big-${b}`, big(b));
      for (let i = 0; i < 12; i++) {
        await index.upsertDocument(
          `small-${i}`,
          doc('ws-small', `small-${i}`, `Note ${i}`, [{ content: `a short note on the boundary of garden ${i}`, vector: vec(i % 3 === 0 ? 3 : 7, 5, 0.1 * (i + 1)) }]),
        );
        for (let j = 0; j < 10; j++, b++) await index.upsertDocument(`big-${b}`, big(b));
      }
      for (const mode of ['hybrid', 'bm25', 'dense'] as const) {
        const hits = await index.search({ text: 'turbulent boundary layer', vector: vec(3), filters: { workspaceId: 'ws-small' }, k: 10, mode });
        expect(hits).toHaveLength(10);
        for (const h of hits) expect(h.documentId).toMatch(/^small-/);
      }
      // Dense order is exact: the notes along axis 3 first, most aligned first.
      const dense = await index.search({ text: '', vector: vec(3), filters: { workspaceId: 'ws-small' }, k: 4, mode: 'dense' });
      expect(dense.map((h) => h.documentId)).toEqual(['small-0', 'small-3', 'small-6', 'small-9']);
      const large = await index.search({ text: 'turbulent boundary layer', vector: vec(3), filters: { workspaceId: 'ws-big' }, k: 10 });
      expect(large).toHaveLength(10);
      for (const h of large) expect(h.documentId).toMatch(/^big-/);
    });

    it('applies every filter, in every mode', async () => {
      await seed();
      const q = { text: 'rocket engines tomatoes style', vector: vec(0, 3, 0.9) };
      for (const mode of ['hybrid', 'bm25', 'dense'] as const) {
        const run = (filters: object) => index.search({ ...q, filters: { workspaceId: 'ws1', ...filters }, k: 10, mode });
        expect(ids(await run({ purpose: 'INSTRUCTION' }))).toEqual(['d-style']);
        const knowledge = ids(await run({ purpose: 'KNOWLEDGE' }));
        expect(knowledge).not.toContain('d-style');
        expect(knowledge).toContain('d-rocket');
        expect(ids(await run({ tags: ['t-eng'] }))).toEqual(['d-rocket', 'd-style']);
        expect(ids(await run({ tags: ['t-home', 't-space'] })).filter((d) => d !== 'd-garden')).toEqual(['d-rocket']);
        expect(ids(await run({ tags: ['t-none'] }))).toEqual([]);
        expect(ids(await run({ documentIds: ['d-style', 'd-other'] }))).toEqual(['d-style']);
        expect(ids(await run({ documentIds: ['d-rocket'], tags: ['t-home'] }))).toEqual([]);
        expect(ids(await run({ documentIds: ['d-rocket', 'd-style'], purpose: 'KNOWLEDGE', tags: ['t-eng'] }))).toEqual(['d-rocket']);
      }
      expect(await index.countDocuments({ workspaceId: 'ws1' })).toBe(3);
      expect(await index.countDocuments({ workspaceId: 'ws1', tags: ['t-eng'] })).toBe(2);
      expect(await index.countDocuments({ workspaceId: 'ws1', tags: ['t-home', 't-space'] })).toBe(2);
      expect(await index.countDocuments({ workspaceId: 'ws1', purpose: 'INSTRUCTION' })).toBe(1);
      expect(await index.countDocuments({ workspaceId: 'ws1', documentIds: ['d-garden', 'd-other', 'nope'] })).toBe(1);
    });

    it('upsert replaces all old chunks of the document', async () => {
      await seed();
      await index.upsertDocument(
        'd-rocket',
        doc('ws1', 'd-rocket', 'Rocket engines v2', [{ content: 'Solid boosters use a grain of propellant.', vector: vec(6) }], { tags: ['t-space'] }),
      );
      const old = await index.search({ text: 'nozzle combustion chamber', filters: { workspaceId: 'ws1' }, k: 10, mode: 'bm25' });
      expect(ids(old)).not.toContain('d-rocket');
      const fresh = await index.search({ text: 'boosters grain', vector: vec(6), filters: { workspaceId: 'ws1' }, k: 10 });
      const rocket = fresh.filter((h) => h.documentId === 'd-rocket');
      expect(rocket).toHaveLength(1);
      expect(rocket[0]).toMatchObject({ chunkIndex: 0, documentTitle: 'Rocket engines v2', tags: ['t-space'] });
      const dense = await index.search({ text: '', vector: vec(1), filters: { workspaceId: 'ws1' }, k: 10, mode: 'dense' });
      expect(dense.filter((h) => h.documentId === 'd-rocket')).toHaveLength(1);
      expect(await index.countDocuments({ workspaceId: 'ws1', tags: ['t-eng'] })).toBe(1);
    });

    it('deletes a document', async () => {
      await seed();
      await index.deleteDocument('d-rocket');
      await index.deleteDocument('d-never-indexed');
      const hits = await index.search({ text: 'rocket combustion', vector: vec(0), filters: { workspaceId: 'ws1' }, k: 10 });
      expect(ids(hits)).not.toContain('d-rocket');
      expect(await index.countDocuments({ workspaceId: 'ws1' })).toBe(2);
      const other = await index.search({ text: 'rocket combustion', vector: vec(0), filters: { workspaceId: 'ws2' }, k: 10 });
      expect(ids(other)).toEqual(['d-other']);
    });

    it('deletes a workspace without touching others', async () => {
      await seed();
      await index.deleteWorkspace('ws1');
      for (const mode of ['hybrid', 'bm25', 'dense'] as const) {
        expect(await index.search({ text: 'rocket tomatoes', vector: vec(0), filters: { workspaceId: 'ws1' }, k: 10, mode })).toEqual([]);
      }
      expect(await index.countDocuments({ workspaceId: 'ws1' })).toBe(0);
      expect(ids(await index.search({ text: 'rocket', vector: vec(0), filters: { workspaceId: 'ws2' }, k: 10 }))).toEqual(['d-other']);
    });

    it('updates title, purpose and tags without re-embedding', async () => {
      await seed();
      await index.updateDocumentFields('d-garden', { documentTitle: 'Vegetable patch handbook', tags: ['t-eng'], purpose: 'INSTRUCTION' });
      const byTitle = await index.search({ text: 'vegetable handbook', filters: { workspaceId: 'ws1' }, k: 10, mode: 'bm25' });
      expect(ids(byTitle)).toEqual(['d-garden']);
      expect(byTitle[0]).toMatchObject({ documentTitle: 'Vegetable patch handbook', tags: ['t-eng'], purpose: 'INSTRUCTION' });
      expect(await index.search({ text: 'gardening basics', filters: { workspaceId: 'ws1' }, k: 10, mode: 'bm25' })).toEqual([]);
      const dense = await index.search({ text: '', vector: vec(2), filters: { workspaceId: 'ws1', purpose: 'INSTRUCTION', tags: ['t-eng'] }, k: 1, mode: 'dense' });
      expect(dense[0]).toMatchObject({ documentId: 'd-garden', content: 'Tomatoes need sunlight, water and well drained soil.' });
      expect(ids(await index.search({ text: 'tomatoes', vector: vec(2), filters: { workspaceId: 'ws1', tags: ['t-home'] }, k: 10 }))).toEqual([]);
      expect(await index.countDocuments({ workspaceId: 'ws1', purpose: 'INSTRUCTION' })).toBe(2);
      // Only the given fields change.
      await index.updateDocumentFields('d-rocket', { tags: [] });
      const rocket = await index.search({ text: 'nozzle', filters: { workspaceId: 'ws1' }, k: 1, mode: 'bm25' });
      expect(rocket[0]).toMatchObject({ documentId: 'd-rocket', documentTitle: 'Rocket engines', purpose: 'KNOWLEDGE', tags: [] });
      await expect(index.updateDocumentFields('d-missing', { tags: ['x'] })).resolves.toBeUndefined();
    });

    it('never throws on hostile query text', async () => {
      await seed();
      const hostile = ['"AND OR ( * NEAR', 'NOT', ')))', '"', "'; DROP TABLE chunks; --", 'title:rocket', 'rocket*', '^rocket', '{a b}: c', 'AND', '', '   ', '😀 🚀', 'a'.repeat(1000), 'NEAR(rocket engines, 2)'];
      for (const text of hostile) {
        for (const mode of ['hybrid', 'bm25'] as const) {
          const hits = await index.search({ text, vector: vec(0), filters: { workspaceId: 'ws1' }, k: 5, mode });
          expect(Array.isArray(hits)).toBe(true);
        }
      }
      const near = await index.search({ text: 'NEAR(rocket engines, 2)', filters: { workspaceId: 'ws1' }, k: 5, mode: 'bm25' });
      expect(near[0].documentId).toBe('d-rocket');
      expect(await index.countDocuments({ workspaceId: 'ws1' })).toBe(3);
    });

    it('keeps the checkpoint', async () => {
      expect(await index.getCheckpoint()).toBe(0);
      await index.setCheckpoint(42);
      expect(await index.getCheckpoint()).toBe(42);
      await index.setCheckpoint(7);
      expect(await index.getCheckpoint()).toBe(7);
    });

    it('clear drops everything and the index is usable afterwards', async () => {
      await seed();
      await index.setCheckpoint(12);
      await index.clear();
      expect(await index.getCheckpoint()).toBe(0);
      expect(await index.countDocuments({ workspaceId: 'ws1' })).toBe(0);
      expect(await index.search({ text: 'rocket', vector: vec(0), filters: { workspaceId: 'ws1' }, k: 5 })).toEqual([]);
      await index.upsertDocument('d-new', doc('ws1', 'd-new', 'New', [{ content: 'rocket again', vector: vec(0) }]));
      const hits = await index.search({ text: 'rocket', vector: vec(0), filters: { workspaceId: 'ws1' }, k: 5 });
      expect(ids(hits)).toEqual(['d-new']);
    });

    describe('two embedding models (a model change)', () => {
      const B_DIMS = 8;
      /** Model B's vectors: 8 dimensions, each document on another axis than under A. */
      const vecB = (axis: number): number[] => Array.from({ length: B_DIMS }, (_, i) => (i === axis % B_DIMS ? 1 : 0));
      const dense = async (vector: number[], vectorModel?: string) =>
        ids(await index.search({ text: '', vector, filters: { workspaceId: 'ws1' }, k: 1, mode: 'dense', ...(vectorModel ? { vectorModel } : {}) }));

      async function seedA(): Promise<void> {
        await index.upsertDocument('d-rocket', doc('ws1', 'd-rocket', 'Rocket engines', [{ content: 'Liquid rocket engines burn propellant.', vector: vec(0) }, { content: 'Nozzle expansion.', vector: vec(1) }]).map((c) => ({ ...c, model: 'A' })));
        await index.upsertDocument('d-garden', doc('ws1', 'd-garden', 'Gardening', [{ content: 'Tomatoes need sunlight.', vector: vec(2) }]).map((c) => ({ ...c, model: 'A' })));
      }

      it('records the model of the first vectors, and refuses vectors of another model as active ones', async () => {
        expect(await index.vectorModels()).toMatchObject({ documents: 0 });
        expect((await index.vectorModels()).active).toBeUndefined();
        await seedA();
        expect(await index.vectorModels()).toEqual({ active: { modelId: 'A', dimensions: 16 }, documents: 2 });
        await expect(index.upsertDocument('d-x', doc('ws1', 'd-x', 'X', [{ content: 'x', vector: vec(3) }]).map((c) => ({ ...c, model: 'B' })))).rejects.toThrow(/B/);
      });

      it('builds the next model beside the active one: searches answer from the old vectors until the switch, then from the new ones only', async () => {
        await seedA();
        await index.beginVectorModel({ modelId: 'B', dimensions: B_DIMS });
        await index.beginVectorModel({ modelId: 'B', dimensions: B_DIMS }); // repeatable (a replay)
        expect((await index.vectorModels()).next).toEqual({ modelId: 'B', dimensions: B_DIMS, documents: 0 });
        // Under B the rocket is on axis 5 and the garden on axis 6.
        await index.putVectors('d-rocket', 'B', [{ chunkIndex: 0, vector: vecB(5) }, { chunkIndex: 1, vector: vecB(5) }]);
        await index.putVectors('d-unknown', 'B', [{ chunkIndex: 0, vector: vecB(5) }]); // not indexed: ignored
        expect((await index.vectorModels()).next?.documents).toBe(1);
        // Searches still use A.
        expect(await dense(vec(2), 'A')).toEqual(['d-garden']);
        await expect(index.search({ text: '', vector: vecB(6), filters: { workspaceId: 'ws1' }, k: 1, mode: 'dense', vectorModel: 'B' })).rejects.toBeInstanceOf(VectorModelChangedError);
        // A document verified during the change arrives with both models' vectors.
        await index.upsertDocument('d-style', doc('ws1', 'd-style', 'Style', [{ content: 'Short sentences.', vector: vec(3) }]).map((c) => ({ ...c, model: 'A', next: { model: 'B', vector: vecB(7) } })));
        await index.putVectors('d-garden', 'B', [{ chunkIndex: 0, vector: vecB(6) }]);
        expect(await index.vectorModels()).toMatchObject({ active: { modelId: 'A' }, next: { modelId: 'B', documents: 3 }, documents: 3 });

        await index.switchVectorModel({ modelId: 'B', dimensions: B_DIMS });
        await index.switchVectorModel({ modelId: 'B', dimensions: B_DIMS }); // repeatable (a replay)
        expect(await index.vectorModels()).toEqual({ active: { modelId: 'B', dimensions: B_DIMS }, documents: 3 });
        expect(await dense(vecB(6), 'B')).toEqual(['d-garden']);
        expect(await dense(vecB(5), 'B')).toEqual(['d-rocket']);
        expect(await dense(vecB(7), 'B')).toEqual(['d-style']);
        // The old vectors are gone: a query of model A is refused, one of A's size cannot be scored.
        await expect(index.search({ text: '', vector: vec(2), filters: { workspaceId: 'ws1' }, k: 1, mode: 'dense', vectorModel: 'A' })).rejects.toBeInstanceOf(VectorModelChangedError);
        await expect(index.search({ text: '', vector: vec(2), filters: { workspaceId: 'ws1' }, k: 1, mode: 'dense' })).rejects.toThrow(/dimensions/);
        const bm25 = await index.search({ text: 'tomatoes', filters: { workspaceId: 'ws1' }, k: 3, mode: 'bm25' });
        expect(ids(bm25)).toEqual(['d-garden']);
      });

      it('a document without the new vectors at the switch is found by BM25 until it gets them', async () => {
        await seedA();
        await index.beginVectorModel({ modelId: 'B', dimensions: B_DIMS });
        await index.putVectors('d-rocket', 'B', [{ chunkIndex: 0, vector: vecB(5) }, { chunkIndex: 1, vector: vecB(5) }]);
        await index.switchVectorModel({ modelId: 'B', dimensions: B_DIMS });
        expect(await dense(vecB(6), 'B')).toEqual(['d-rocket']); // the garden has no vector
        expect((await index.search({ text: 'tomatoes', vector: vecB(6), filters: { workspaceId: 'ws1' }, k: 3, vectorModel: 'B' }))[0].documentId).toBe('d-garden');
        await index.putVectors('d-garden', 'B', [{ chunkIndex: 0, vector: vecB(6) }]);
        expect(await dense(vecB(6), 'B')).toEqual(['d-garden']);
      });

      it('a cancelled change drops the next model\'s vectors; searches never saw them', async () => {
        await seedA();
        await index.beginVectorModel({ modelId: 'B', dimensions: B_DIMS });
        await index.putVectors('d-rocket', 'B', [{ chunkIndex: 0, vector: vecB(5) }, { chunkIndex: 1, vector: vecB(5) }]);
        await index.dropVectorModel('B');
        expect(await index.vectorModels()).toEqual({ active: { modelId: 'A', dimensions: 16 }, documents: 2 });
        expect(await dense(vec(0), 'A')).toEqual(['d-rocket']);
        // Vectors of a model neither active nor being built are ignored.
        await index.putVectors('d-garden', 'B', [{ chunkIndex: 0, vector: vecB(6) }]);
        expect(await index.vectorModels()).toEqual({ active: { modelId: 'A', dimensions: 16 }, documents: 2 });
      });

      it('a deleted document leaves the next model\'s count; clear forgets both models', async () => {
        await seedA();
        await index.beginVectorModel({ modelId: 'B', dimensions: B_DIMS });
        await index.putVectors('d-rocket', 'B', [{ chunkIndex: 0, vector: vecB(5) }, { chunkIndex: 1, vector: vecB(5) }]);
        await index.deleteDocument('d-rocket');
        expect(await index.vectorModels()).toMatchObject({ next: { documents: 0 }, documents: 1 });
        await index.clear();
        expect(await index.vectorModels()).toEqual({ documents: 0 });
      });
    });
  });
}
