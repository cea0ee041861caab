import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Component, planRole, RoleParts, runsProjections } from '../../src/roles/plan';
import { feedPublisherProjection, processingDispatcherProjection, processDocumentJob, PROCESS_DOCUMENT_JOB } from '../../src/roles/pipelineProjections';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { readModelProjection } from '../../src/core/projection';
import { ProjectionRunner } from '../../src/core/projectionRunner';
import { NewEvent, RecordedEvent } from '../../src/domain/event';
import { Job, JobQueue } from '../../src/ports/jobQueue';
import { EventFeed } from '../../src/ports/eventFeed';
import { DocumentProcessor } from '../../src/processing/documentProcessor';
import { PoisonMessageError } from '../../src/adapters/jobRetry';
import { AppContext } from '../../src/app/context';

const meta = { actorId: 'u1', authMethod: 'session' as const, correlationId: 'c', occurredAt: '2024-01-01T00:00:00.000Z', schemaVersion: 1 };

function fakeParts(withKafka: boolean): { parts: RoleParts; started: string[] } {
  const started: string[] = [];
  const fake = (name: string): Component => ({ name, start: async () => void started.push(name), stop: async () => undefined });
  const parts: RoleParts = {
    runner: fake('projections'),
    feedPublisher: withKafka ? fake('feed-publisher') : undefined,
    dispatcher: withKafka ? fake('processing-dispatcher') : undefined,
    services: ['document-processor', 'instruction-set-cleanup', 'query-history-sweeper', 'erasure'].map(fake),
  };
  return { parts, started };
}

async function startPlan(role: 'all' | 'api' | 'projector' | 'worker', withKafka: boolean): Promise<{ http: string; started: string[] }> {
  const { parts, started } = fakeParts(withKafka);
  const plan = planRole(role, parts);
  for (const c of plan.components) await c.start();
  return { http: plan.http, started };
}

describe('role selection (KB_ROLE)', () => {
  const services = ['document-processor', 'instruction-set-cleanup', 'query-history-sweeper', 'erasure'];

  it('all: HTTP API, projections and every background service (embedded default)', async () => {
    expect(await startPlan('all', false)).toEqual({ http: 'api', started: ['projections', ...services] });
  });

  it('all with Kafka: also the feed publisher and the processing dispatcher', async () => {
    expect(await startPlan('all', true)).toEqual({ http: 'api', started: ['projections', 'feed-publisher', 'processing-dispatcher', ...services] });
  });

  it('api: HTTP API and the checkpoint watcher only; no background service, no pipeline', async () => {
    expect(await startPlan('api', true)).toEqual({ http: 'api', started: ['projections'] });
    expect(runsProjections('api')).toBe(false); // the runner polls the projector's checkpoints
  });

  it('projector: projections, feed publisher and dispatcher; health endpoints only', async () => {
    expect(await startPlan('projector', true)).toEqual({ http: 'health', started: ['projections', 'feed-publisher', 'processing-dispatcher'] });
    expect(await startPlan('projector', false)).toEqual({ http: 'health', started: ['projections'] });
    expect(runsProjections('projector')).toBe(true);
  });

  it('worker: background services only; health endpoint only; does not run projections', async () => {
    expect(await startPlan('worker', true)).toEqual({ http: 'health', started: services });
    expect(runsProjections('worker')).toBe(false);
    expect(runsProjections('all')).toBe(true);
  });
});

function recorded(position: number, type: string, data: unknown): RecordedEvent {
  return { id: randomUUID(), type, data, metadata: meta, streamId: 'document-x', revision: position - 1, position };
}

describe('side-effect projections of the projector', () => {
  let dir: string;
  let store: SqliteReadStore;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-roles-'));
    store = new SqliteReadStore(path.join(dir, 'read.db'));
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const fakeQueue = (): JobQueue & { jobs: Job[] } => {
    const jobs: Job[] = [];
    return { jobs, enqueue: async (j) => void jobs.push(j), consume: async () => ({ stop: async () => undefined }), close: async () => undefined };
  };

  it('the dispatcher enqueues exactly one job per processing run', async () => {
    const queue = fakeQueue();
    const p = processingDispatcherProjection(store, queue);
    await p.apply([
      recorded(1, 'DocumentUploaded', { documentId: 'd1' }),
      recorded(2, 'DocumentProcessingStarted', { documentId: 'd1', processingId: 'run-1', reason: 'UPLOADED' }),
      recorded(3, 'DocumentTextExtracted', { documentId: 'd1', processingId: 'run-1' }),
      recorded(4, 'DocumentProcessingStarted', { documentId: 'd2', processingId: 'run-2', reason: 'UPLOADED' }),
    ]);
    expect(queue.jobs).toEqual([processDocumentJob('d1', 'run-1'), processDocumentJob('d2', 'run-2')]);
    expect(queue.jobs[0]).toEqual({ id: 'run-1', type: PROCESS_DOCUMENT_JOB, payload: { documentId: 'd1', processingId: 'run-1' } });
    expect(await p.checkpoint()).toBe(4);
  });

  it('the dispatcher skips events it has already dispatched (replay, overlapping batch)', async () => {
    const queue = fakeQueue();
    const p = processingDispatcherProjection(store, queue);
    const first = [recorded(1, 'DocumentProcessingStarted', { documentId: 'd1', processingId: 'run-1' })];
    await p.apply(first);
    await p.apply(first);
    await p.apply([...first, recorded(2, 'DocumentProcessingStarted', { documentId: 'd1', processingId: 'run-2', reason: 'RESUMED' })]);
    expect(queue.jobs.map((j) => j.id)).toEqual(['run-1', 'run-2']);
  });

  it('the dispatcher does not move its checkpoint when enqueueing fails (the batch is retried)', async () => {
    const queue = fakeQueue();
    queue.enqueue = async () => {
      throw new Error('broker down');
    };
    const p = processingDispatcherProjection(store, queue);
    await expect(p.apply([recorded(1, 'DocumentProcessingStarted', { documentId: 'd1', processingId: 'run-1' })])).rejects.toThrow('broker down');
    expect(await p.checkpoint()).toBe(0);
  });

  it('the feed publisher publishes each new event once, in order, with its own checkpoint', async () => {
    const published: number[] = [];
    const feed: EventFeed = { publish: async (events) => void published.push(...events.map((e) => e.position)), close: async () => undefined };
    const p = feedPublisherProjection(store, feed);
    const batch = [recorded(1, 'A', {}), recorded(2, 'B', {})];
    await p.apply(batch);
    await p.apply([...batch, recorded(3, 'C', {})]);
    expect(published).toEqual([1, 2, 3]);
    expect(await p.checkpoint()).toBe(3);
  });
});

describe('ProjectionRunner.waitFor in a process that does not run the projections (poll mode)', () => {
  let dir: string;
  let events: SqliteEventStore;
  let projectorStore: SqliteReadStore;
  let apiStore: SqliteReadStore;
  let projector: ProjectionRunner;
  let api: ProjectionRunner;
  const notes = (store: SqliteReadStore) =>
    readModelProjection('notes', store, ['notes'], async (e, s) => {
      await s.collection<{ id: string; text: string }>('notes').put({ id: e.id, text: (e.data as { text: string }).text });
    });
  const append = async (text: string): Promise<number> => {
    const e: NewEvent = { id: randomUUID(), type: 'NoteAdded', data: { text }, metadata: meta };
    return (await events.append(`note-${randomUUID()}`, [e], 'no_stream')).position;
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-poll-'));
    events = new SqliteEventStore(path.join(dir, 'events.db'));
    // Two handles on one read store file: the projector's and the API process's.
    projectorStore = new SqliteReadStore(path.join(dir, 'read.db'));
    apiStore = new SqliteReadStore(path.join(dir, 'read.db'));
    projector = new ProjectionRunner(events, [notes(projectorStore)]);
    api = new ProjectionRunner(events, [notes(apiStore)], undefined, { mode: 'poll', pollIntervalMs: 20 });
  });
  afterEach(async () => {
    await api.stop();
    await projector.stop();
    await events.close();
    await projectorStore.close();
    await apiStore.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('resolves once the projector has applied the position, and the write is then readable', async () => {
    await projector.start();
    const position = await append('hello');
    expect(await api.waitFor(position, 30_000)).toBe(true);
    expect((await apiStore.collection<{ id: string; text: string }>('notes').find({})).map((n) => n.text)).toEqual(['hello']);
    expect(api.lowWatermark()).toBeGreaterThanOrEqual(position);
  });

  it('serves many concurrent waiters from one polling loop', async () => {
    await projector.start();
    const positions = await Promise.all(['a', 'b', 'c'].map(append));
    const results = await Promise.all(positions.map((p) => api.waitFor(p, 30_000)));
    expect(results).toEqual([true, true, true]);
  });

  it('resolves false after the timeout when no projector runs', async () => {
    const position = await append('nobody projects this');
    expect(await api.waitFor(position, 200)).toBe(false);
    expect(await apiStore.collection('notes').count({})).toBe(0);
  });

  it('picks up a projector that starts while it waits', async () => {
    const position = await append('late');
    const waiting = api.waitFor(position, 30_000);
    await projector.start();
    expect(await waiting).toBe(true);
  });

  it('in poll mode start() only reads checkpoints (it never applies events)', async () => {
    const position = await append('x');
    await api.start();
    expect(api.lowWatermark()).toBe(0);
    expect(position).toBeGreaterThan(0);
    expect(await apiStore.getCheckpoint('notes')).toBe(0);
  });
});

describe('document processor driven by the job queue', () => {
  const warmups: string[] = [];
  const ctx = {
    config: { role: 'worker', processing: { concurrency: 3, perWorkspace: 2 }, extraction: { timeoutMs: 1000 }, chunkTokens: 200, chunkOverlap: 20 },
    logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
    eventStore: { readStream: async () => [] },
    readStore: {},
    embeddingModels: { configured: {} },
    warmup: { add: (what: string) => void warmups.push(what) },
  } as unknown as AppContext;

  it('dead-letters a job of another type at once', async () => {
    const p = new DocumentProcessor(ctx);
    await expect(p.handleJob({ id: 'j', type: 'something-else', payload: {} })).rejects.toBeInstanceOf(PoisonMessageError);
    await expect(p.handleJob({ id: 'j', type: PROCESS_DOCUMENT_JOB, payload: { documentId: 1 } })).rejects.toBeInstanceOf(PoisonMessageError);
  });

  it('skips (acknowledges) a job whose run is not current', async () => {
    const p = new DocumentProcessor(ctx);
    await expect(p.handleJob(processDocumentJob('unknown-doc', 'run-1'))).resolves.toBeUndefined();
    expect(await p.process('unknown-doc', 'run-1')).toBe('skipped');
  });

  it('consumes the queue it is given instead of following the log', async () => {
    const consumed: string[] = [];
    const queue: JobQueue = {
      enqueue: async () => undefined,
      consume: async (handler, options) => {
        consumed.push(`concurrency=${options?.concurrency} maxPerGroup=${options?.maxPerGroup}`);
        await handler(processDocumentJob('unknown-doc', 'run-1'));
        return { stop: async () => void consumed.push('stopped') };
      },
      close: async () => undefined,
    };
    const p = new DocumentProcessor({ ...ctx, eventStore: { readStream: async () => [], subscribe: () => { throw new Error('must not follow the log'); } } } as unknown as AppContext, { jobQueue: queue });
    await p.start();
    await p.stop();
    // Several jobs at once, at most perWorkspace of one workspace (the job's group).
    expect(consumed).toEqual(['concurrency=3 maxPerGroup=2', 'stopped']);
    // Its start warms the extraction worker and the document embedder up (reported on /readyz).
    expect(warmups).toEqual(['document processing']);
  });
});
