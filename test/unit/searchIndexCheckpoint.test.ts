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
import { workspaceDecider } from '../../src/domain/workspace/decider';
import { workspaceStream } from '../../src/domain/workspace/events';
import { documentStream, DocumentEvent, encodeVector } from '../../src/domain/document/events';
import { EMBEDDING_MODEL_STREAM } from '../../src/domain/embeddingModel/events';
import { RecordedEvent } from '../../src/domain/event';
import { SearchIndex } from '../../src/ports/searchIndex';
import { ReadStore } from '../../src/ports/readStore';
import { EventStore } from '../../src/ports/eventStore';
import { searchIndexProjection } from '../../projections/searchIndex/searchIndexProjection';
import { Reembedder } from '../../src/processing/reembedder';
import { searchWorkspace } from '../../queries/search/searchService';
import { fixedModels, hashEmbedder } from '../support/embedders';
import { cli } from '../support/cli';

const logger = pino({ level: 'silent' });
const OWNER = '00000000-0000-4000-8000-0000000000ab';

/** A recorded event of a type the search index does not act on. */
const tagEvent = (position: number, workspaceId: string): RecordedEvent =>
  ({
    id: randomUUID(),
    position,
    revision: position,
    streamId: workspaceStream(workspaceId),
    type: 'TagCreated',
    data: { workspaceId, tagId: randomUUID(), name: `t${position}`, color: '#000000' },
    metadata: { occurredAt: new Date().toISOString(), actorId: OWNER, authMethod: 'system', correlationId: randomUUID() },
  }) as unknown as RecordedEvent;

describe('search index projection: checkpoint of batches it does not act on', () => {
  /** An index that only counts its checkpoint's reads and writes. */
  const countingIndex = () => {
    const calls = { get: 0, set: [] as number[] };
    let stored = 0;
    const index = {
      getCheckpoint: async () => {
        calls.get += 1;
        return stored;
      },
      setCheckpoint: async (p: number) => {
        calls.set.push(p);
        stored = p;
      },
    } as unknown as SearchIndex;
    return { index, calls };
  };
  const deps = (searchIndex: SearchIndex) => ({
    eventStore: {} as EventStore,
    readStore: { collection: () => ({}) } as unknown as ReadStore,
    searchIndex,
  });

  it('lazy (one process with its own index): a batch of other events costs the index no checkpoint read or write after the first', async () => {
    const { index, calls } = countingIndex();
    const p = searchIndexProjection({ ...deps(index), lazyCheckpoint: true });
    const w = randomUUID();
    await p.apply([tagEvent(1, w), tagEvent(2, w)]);
    const afterFirst = { get: calls.get, set: calls.set.length };
    for (let i = 3; i < 103; i++) await p.apply([tagEvent(i, w)]);
    expect(calls.get).toBe(afterFirst.get);
    expect(calls.set).toHaveLength(afterFirst.set);
  });

  it('stored (a split deployment: other processes wait on the stored checkpoint): every batch moves it', async () => {
    const { index, calls } = countingIndex();
    const p = searchIndexProjection(deps(index));
    const w = randomUUID();
    for (let i = 1; i <= 50; i++) await p.apply([tagEvent(i, w)]);
    expect(calls.set).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });
});

describe('search index with a lazy checkpoint, in the container (role all, embedded index)', () => {
  let dir: string;
  let ctx: AppContext;
  let di: DependencyContainer;
  const A = hashEmbedder('test:A', 16);
  const B = hashEmbedder('test:B', 24);
  const workspaceId = randomUUID();

  const open = async () => {
    ({ ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir }), logger));
    ctx.embeddingModels = fixedModels(A);
    await ctx.runner.start();
  };
  const settle = async () => expect(await ctx.runner.waitFor(await ctx.eventStore.headPosition(), 20_000)).toBe(true);
  const createTags = async (n: number) => {
    for (let i = 0; i < n; i++) {
      await handleCommand(ctx.eventStore, workspaceStream(workspaceId), workspaceDecider, { type: 'CreateTag', actorId: OWNER, tagId: randomUUID(), name: `tag-${randomUUID()}`, color: '#112233' }, { ...systemContext(), actorId: OWNER }, { workspaceId });
    }
  };

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-lazy-checkpoint-'));
    await open();
    await handleCommand(ctx.eventStore, workspaceStream(workspaceId), workspaceDecider, { type: 'CreateWorkspace', workspaceId, actorId: OWNER, name: 'W', now: new Date() }, { ...systemContext(), actorId: OWNER }, { workspaceId });
    const documentId = randomUUID();
    const processingId = randomUUID();
    const texts = ['pancakes need flour eggs and milk'];
    const vectors = await A.embed(texts);
    const base = { documentId, workspaceId };
    const now = new Date().toISOString();
    const events: DocumentEvent[] = [
      { type: 'DocumentUploaded', data: { ...base, blob: { sha256: 'a'.repeat(64), size: 10 }, kind: 'txt', mimeType: 'text/plain', size: 10, filename: 'd.txt', title: 'Pancakes', purpose: 'KNOWLEDGE', tags: [], uploadedBy: OWNER, uploadedAt: now } },
      { type: 'DocumentProcessingStarted', data: { ...base, processingId, reason: 'UPLOADED', startedAt: now } },
      { type: 'DocumentTextExtracted', data: { ...base, processingId, sections: [{ text: texts[0] }], tokenCount: 6, sizeBytes: 10 } },
      { type: 'DocumentChunked', data: { ...base, processingId, chunks: [{ index: 0, content: texts[0], tokenCount: 6 }] } },
      { type: 'ChunksEmbedded', data: { ...base, processingId, modelId: A.modelId, dimensions: A.dimensions, vectors: vectors.map((v, index) => ({ index, vector: encodeVector(v) })) } },
      { type: 'DocumentVerified', data: { ...base, processingId, chunkCount: 1, tokenCount: 6, modelId: A.modelId } },
    ];
    await ctx.eventStore.append(documentStream(documentId), toNewEvents(events, systemContext(), workspaceId), 'no_stream');
    await settle();
  }, 60_000);

  afterAll(async () => {
    await closeContainer(di);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('commands the index does not act on are readable at once (read-your-writes) while its stored checkpoint stays put', async () => {
    const before = await ctx.searchIndex.getCheckpoint();
    await createTags(5);
    const head = await ctx.eventStore.headPosition();
    expect(await ctx.runner.waitFor(head, 5000)).toBe(true);
    expect(ctx.runner.positionOf('search-index')).toBe(head);
    expect(await ctx.searchIndex.getCheckpoint()).toBe(before);
    expect(before).toBeLessThan(head);
  });

  it('`kb projections` says the index is up to date when none of the events after its stored checkpoint is one it acts on, and how many are left when some are', async () => {
    await closeContainer(di);
    try {
      const upToDate = (await cli(dir, ['projections'])).stdout.split('\n').find((l) => l.startsWith('search-index\t'));
      expect(upToDate).toMatch(/^search-index\t\d+\/\d+\t\(up to date: none of the events after its checkpoint is one it acts on\)$/);
      // A tag created and deleted while nothing projects: the deletion is one the index acts on.
      ({ ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir }), logger));
      const tagId = randomUUID();
      const as = { ...systemContext(), actorId: OWNER };
      await handleCommand(ctx.eventStore, workspaceStream(workspaceId), workspaceDecider, { type: 'CreateTag', actorId: OWNER, tagId, name: `gone-${tagId}`, color: '#112233' }, as, { workspaceId });
      await handleCommand(ctx.eventStore, workspaceStream(workspaceId), workspaceDecider, { type: 'DeleteTag', actorId: OWNER, tagId }, as, { workspaceId });
      await closeContainer(di);
      const behind = (await cli(dir, ['projections'])).stdout.split('\n').find((l) => l.startsWith('search-index\t'));
      expect(behind).toMatch(/^search-index\t\d+\/\d+\t\(1 event to apply\)$/);
    } finally {
      await open();
    }
  }, 60_000);

  it('a restart resumes from the stored checkpoint: nothing is applied twice or lost, and search answers', async () => {
    await closeContainer(di);
    await open();
    await settle();
    const hits = await searchWorkspace(ctx, { workspaceId, query: 'flour and eggs', limit: 3 });
    expect(hits[0]?.content).toContain('pancakes');
    expect(await ctx.searchIndex.vectorModels()).toMatchObject({ active: { modelId: 'test:A' }, documents: 1 });
  }, 60_000);

  it('a model change starts although the index stored no checkpoint for the tail of the log (the re-embedder waits for the last model event, not the head)', async () => {
    await createTags(3);
    await settle();
    expect(await ctx.searchIndex.getCheckpoint()).toBeLessThan(await ctx.eventStore.headPosition());
    ctx.embeddingModels = fixedModels(B, A);
    const r = new Reembedder(ctx, fixedModels(B, A), { follow: false });
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([r.runToCompletion(), new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still waiting'), 8000)))]);
    clearTimeout(timer);
    await r.stop();
    expect(outcome).toBe('completed');
    expect((await ctx.eventStore.readStream(EMBEDDING_MODEL_STREAM)).map((e) => e.type)).toEqual(['EmbeddingModelChangeStarted', 'EmbeddingModelChangeCompleted']);
    await settle();
    expect(await ctx.searchIndex.vectorModels()).toMatchObject({ active: { modelId: 'test:B' } });
  }, 60_000);
});
