import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { DependencyContainer } from 'tsyringe';
import { buildContainer, closeContainer } from '../../src/container';
import { loadConfig } from '../../src/config/config';
import { AppContext } from '../../src/app/context';
import { handleCommand, systemContext, toNewEvents } from '../../src/core/commandHandler';
import { rebuildProjections } from '../../src/core/projectionRunner';
import { workspaceDecider } from '../../src/domain/workspace/decider';
import { workspaceStream } from '../../src/domain/workspace/events';
import { documentStream, DocumentEvent, encodeVector } from '../../src/domain/document/events';
import { EMBEDDING_MODEL_STREAM } from '../../src/domain/embeddingModel/events';
import { EmbeddingModels, EmbeddingProvider } from '../../src/ports/embeddings';
import { isVectorModelChanged, VectorModelChangedError } from '../../src/ports/searchIndex';
import { Reembedder, REEMBED_BATCH } from '../../src/processing/reembedder';
import { searchWorkspace } from '../../queries/search/searchService';
import { fixedModels, hashEmbedder } from '../support/embedders';

const logger = pino({ level: 'silent' });
const OWNER = '00000000-0000-4000-8000-0000000000aa';

/** Re-embedding in process: two deterministic models, A (16 dimensions) then B (24). */
describe('re-embedder: a model change in the log, through the search index', () => {
  let dir: string;
  let ctx: AppContext;
  let di: DependencyContainer;
  const A = hashEmbedder('test:A', 16);
  const B = hashEmbedder('test:B', 24);
  const big = randomUUID(); // four documents, one of them long
  const small = randomUUID(); // one document
  const docs = new Map<string, { workspaceId: string; texts: string[] }>();

  /** A VERIFIED document appended as its pipeline would, embedded with `model`. */
  async function verifiedDocument(workspaceId: string, texts: string[], model: EmbeddingProvider = A): Promise<{ documentId: string; position: number }> {
    const documentId = randomUUID();
    const processingId = randomUUID();
    const vectors = await model.embed(texts);
    const base = { documentId, workspaceId };
    const now = new Date().toISOString();
    const events: DocumentEvent[] = [
      { type: 'DocumentUploaded', data: { ...base, blob: { sha256: 'a'.repeat(64), size: 10 }, kind: 'txt', mimeType: 'text/plain', size: 10, filename: 'd.txt', title: texts[0].slice(0, 20), purpose: 'KNOWLEDGE', tags: [], uploadedBy: OWNER, uploadedAt: now } },
      { type: 'DocumentProcessingStarted', data: { ...base, processingId, reason: 'UPLOADED', startedAt: now } },
      { type: 'DocumentTextExtracted', data: { ...base, processingId, sections: [{ text: texts.join(' ') }], tokenCount: texts.length * 5, sizeBytes: 10 } },
      { type: 'DocumentChunked', data: { ...base, processingId, chunks: texts.map((content, index) => ({ index, content, tokenCount: 5 })) } },
      { type: 'ChunksEmbedded', data: { ...base, processingId, modelId: model.modelId, dimensions: model.dimensions, vectors: vectors.map((v, index) => ({ index, vector: encodeVector(v) })) } },
      { type: 'DocumentVerified', data: { ...base, processingId, chunkCount: texts.length, tokenCount: texts.length * 5, modelId: model.modelId } },
    ];
    const r = await ctx.eventStore.append(documentStream(documentId), toNewEvents(events, systemContext(), workspaceId), 'no_stream');
    docs.set(documentId, { workspaceId, texts });
    return { documentId, position: r.position };
  }

  const settle = async (): Promise<void> => {
    expect(await ctx.runner.waitFor(await ctx.eventStore.headPosition(), 20_000)).toBe(true);
  };
  const typesOf = async (stream: string): Promise<string[]> => (await ctx.eventStore.readStream(stream)).map((e) => e.type);
  const search = (workspaceId: string, query: string) => searchWorkspace(ctx, { workspaceId, query, limit: 3 });
  const use = (models: EmbeddingModels): void => {
    ctx.embeddingModels = models;
  };

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-reembed-'));
    ({ ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir }), logger));
    use(fixedModels(A));
    await ctx.runner.start();
    for (const workspaceId of [big, small]) {
      await handleCommand(ctx.eventStore, workspaceStream(workspaceId), workspaceDecider, { type: 'CreateWorkspace', workspaceId, actorId: OWNER, name: 'W', now: new Date() }, { ...systemContext(), actorId: OWNER }, { workspaceId });
    }
    const long = Array.from({ length: REEMBED_BATCH + 8 }, (_, i) => `section ${i} of the long handbook about turbine blades number${i}`);
    await verifiedDocument(big, long);
    await verifiedDocument(big, ['swept wings delay the transonic drag rise']);
    await verifiedDocument(big, ['the rudder turns the aircraft about its vertical axis']);
    await verifiedDocument(big, ['flaps raise the lift coefficient at low speed']);
    await verifiedDocument(small, ['pancakes need flour eggs and milk']);
    await settle();
  }, 60_000);

  afterAll(async () => {
    await closeContainer(di);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the index answers with the model that made its vectors', async () => {
    expect(await ctx.searchIndex.vectorModels()).toEqual({ active: { modelId: 'test:A', dimensions: 16 }, documents: 5 });
    expect((await search(small, 'flour and eggs'))[0]?.content).toContain('pancakes');
  });

  it('interrupted mid-document, a new re-embedder resumes at the first chunk without the new vectors; searches keep using A until the switch', async () => {
    use(fixedModels(B, A));
    // The first re-embedder stops at the long document's second batch (a crash mid-document).
    const first = new Reembedder(ctx, fixedModels(B, A), { follow: false });
    const stopping: EmbeddingProvider = {
      ...B,
      embed: async (texts) => {
        if (texts.some((t) => t.startsWith(`section ${REEMBED_BATCH} `))) {
          void first.stop();
          throw new Error('killed');
        }
        return B.embed(texts);
      },
    };
    Object.assign(first, { models: fixedModels(stopping, A) });
    await expect(first.runToCompletion()).rejects.toThrow('killed');
    await settle();
    const longDoc = [...docs.entries()].find(([, d]) => d.texts.length > REEMBED_BATCH)![0];
    expect(await typesOf(documentStream(longDoc))).toContain('ChunksReembedded');
    expect(await typesOf(documentStream(longDoc))).not.toContain('DocumentReembedded');
    const midway = await ctx.searchIndex.vectorModels();
    expect(midway).toMatchObject({ active: { modelId: 'test:A' }, next: { modelId: 'test:B', dimensions: 24 }, documents: 5 });
    // Still answering from A's vectors, embedding queries with A.
    A.calls.length = 0;
    expect((await search(big, 'rudder vertical axis'))[0]?.content).toContain('rudder');
    expect(A.calls.flat()).toContain('rudder vertical axis');

    const progress: { done: number; total: number }[] = [];
    const second = new Reembedder(ctx, fixedModels(B, A), { follow: false });
    expect(await second.runToCompletion((p) => progress.push({ done: p.done, total: p.total }))).toBe('completed');
    await settle();
    expect(progress[progress.length - 1]).toBeDefined();
    expect(progress.every((p) => p.total === 5)).toBe(true);

    // Every chunk got B's vector exactly once, in order, across both re-embedders.
    for (const [documentId, d] of docs) {
      const events = (await ctx.eventStore.readStream(documentStream(documentId))) as unknown as DocumentEvent[];
      const indexes = events.flatMap((e) => (e.type === 'ChunksReembedded' ? e.data.vectors.map((v) => v.index) : []));
      expect(indexes).toEqual(d.texts.map((_, i) => i));
      expect(events.filter((e) => e.type === 'DocumentReembedded')).toHaveLength(1);
    }
    expect(await typesOf(EMBEDDING_MODEL_STREAM)).toEqual(['EmbeddingModelChangeStarted', 'EmbeddingModelChangeCompleted']);
  });

  it('after the switch the index holds only B\'s vectors and searches embed queries with B', async () => {
    expect(await ctx.searchIndex.vectorModels()).toEqual({ active: { modelId: 'test:B', dimensions: 24 }, documents: 5 });
    B.calls.length = 0;
    const hits = await search(big, 'swept wings transonic');
    expect(hits[0]?.content).toContain('swept wings');
    expect(B.calls.flat()).toContain('swept wings transonic');
    // Dense alone finds it too: the vectors are B's.
    const [q] = await B.embed(['flaps lift coefficient']);
    const dense = await ctx.searchIndex.search({ text: '', vector: q, filters: { workspaceId: big }, k: 1, mode: 'dense', vectorModel: 'test:B' });
    expect(dense[0]?.content).toContain('flaps');
  });

  it('rebuilding the index from the log ends on the current model', async () => {
    const index = ctx.projections.find((p) => p.name === 'search-index')!;
    await ctx.runner.stop();
    await rebuildProjections(ctx.eventStore, [index]);
    await ctx.runner.start();
    expect(await ctx.searchIndex.vectorModels()).toEqual({ active: { modelId: 'test:B', dimensions: 24 }, documents: 5 });
    expect((await search(small, 'milk and flour'))[0]?.content).toContain('pancakes');
  });

  it('a document embedded with the old model after the switch (a straggler) gets the active model\'s vectors from the following re-embedder', async () => {
    const follower = new Reembedder(ctx, fixedModels(B, A));
    await follower.start();
    try {
      const { documentId } = await verifiedDocument(small, ['maple syrup on waffles']);
      let reembedded = false;
      for (let i = 0; i < 200 && !reembedded; i++) {
        reembedded = (await typesOf(documentStream(documentId))).includes('DocumentReembedded');
        if (!reembedded) await new Promise((r) => setTimeout(r, 50));
      }
      expect(reembedded).toBe(true);
      await settle();
      const [q] = await B.embed(['maple syrup waffles']);
      const dense = await ctx.searchIndex.search({ text: '', vector: q, filters: { workspaceId: small }, k: 1, mode: 'dense', vectorModel: 'test:B' });
      expect(dense[0]?.documentId).toBe(documentId);
    } finally {
      await follower.stop();
    }
  });

  it('re-embeds round-robin across workspaces: the small workspace does not wait behind the big one', async () => {
    const C = hashEmbedder('test:C', 8);
    // One document at a time, so that the order shows (by default a few run at once, taken in the same order).
    const r = new Reembedder(ctx, fixedModels(C, B), { follow: false, concurrency: 1 });
    expect(await r.runToCompletion()).toBe('completed');
    await settle();
    // The documents in the order their first batch was embedded.
    const docOf = (text: string): string => [...docs.entries()].find(([, d]) => d.texts.includes(text))![0];
    const order = C.calls.map((batch) => docOf(batch[0])).filter((d, i, all) => i === 0 || all[i - 1] !== d);
    expect(order).toHaveLength(docs.size);
    expect(order.slice(0, 2).some((d) => docs.get(d)!.workspaceId === small)).toBe(true);
    expect(await ctx.searchIndex.vectorModels()).toMatchObject({ active: { modelId: 'test:C' } });
  });

  it('configuration back to the active model cancels a change under way; its vectors are dropped', async () => {
    const D = hashEmbedder('test:D', 12);
    const C = hashEmbedder('test:C', 8);
    let started = false;
    const r = new Reembedder(ctx, fixedModels(D, C), { follow: false });
    const stopping: EmbeddingProvider = {
      ...D,
      embed: async (texts) => {
        if (started) {
          void r.stop();
          throw new Error('stopped');
        }
        started = true;
        return D.embed(texts);
      },
    };
    Object.assign(r, { models: fixedModels(stopping, C) });
    await expect(r.runToCompletion()).rejects.toThrow('stopped');
    await settle();
    expect((await ctx.searchIndex.vectorModels()).next?.modelId).toBe('test:D');
    expect(await new Reembedder(ctx, fixedModels(C), { follow: false }).runToCompletion()).toBe('nothing-to-do');
    await settle();
    expect(await ctx.searchIndex.vectorModels()).toEqual({ active: { modelId: 'test:C', dimensions: 8 }, documents: 6 });
    const types = await typesOf(EMBEDDING_MODEL_STREAM);
    expect(types.slice(-2)).toEqual(['EmbeddingModelChangeStarted', 'EmbeddingModelChangeCancelled']);
  });

  it('a change back to a model the documents already have vectors of embeds nothing: the log\'s vectors are restated for the index', async () => {
    B.calls.length = 0;
    const C = hashEmbedder('test:C', 8);
    expect(await new Reembedder(ctx, fixedModels(B, C), { follow: false }).runToCompletion()).toBe('completed');
    await settle();
    expect(B.calls).toEqual([]);
    expect(await ctx.searchIndex.vectorModels()).toEqual({ active: { modelId: 'test:B', dimensions: 24 }, documents: 6 });
    const [q] = await B.embed(['rudder vertical axis']);
    const dense = await ctx.searchIndex.search({ text: '', vector: q, filters: { workspaceId: big }, k: 1, mode: 'dense', vectorModel: 'test:B' });
    expect(dense[0]?.content).toContain('rudder');
  });

  it('a model change is recognised also as a plain Error carrying its name (from the index\'s worker thread)', () => {
    expect(isVectorModelChanged(new VectorModelChangedError('a', 'b'))).toBe(true);
    expect(isVectorModelChanged(Object.assign(new Error('query embedded with a'), { name: 'VectorModelChangedError' }))).toBe(true);
    expect(isVectorModelChanged(new Error('query vector has 16 dimensions, index has 24'))).toBe(false);
  });
});
