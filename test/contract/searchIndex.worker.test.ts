import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedSearchIndex } from '../../src/adapters/embedded/embeddedSearchIndex';
import { CallQueue, type WorkerMethod } from '../../src/adapters/embedded/searchWorkerProtocol';
import { WorkerSearchIndex } from '../../src/adapters/embedded/workerSearchIndex';
import type { IndexedChunk, SearchIndex, SearchRequest } from '../../src/ports/searchIndex';
import { searchIndexContract } from './searchIndex.contract';
import { mulberry32 as rng } from '../../src/util/random';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-index-worker-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshFile = (): string => path.join(dir, `index-${++files}.sqlite`);

searchIndexContract('embedded (worker thread)', async () => WorkerSearchIndex.open(freshFile()));
// The approximate dense index forced on from the first chunk in the worker's index (its setting crosses the thread).
searchIndexContract('embedded (worker thread, approximate dense index forced on)', async () =>
  WorkerSearchIndex.open(freshFile(), { ann: { buildAt: 0, minScope: 0, probeLists: 1e9, minProbe: 1 } }),
);

it('the approximate dense index setting reaches the worker\'s index', async () => {
  const index = await WorkerSearchIndex.open(freshFile(), { ann: { buildAt: 0, minScope: 0 } });
  await index.upsertDocument('d', [{ workspaceId: 'w', documentId: 'd', documentTitle: 't', purpose: 'KNOWLEDGE', tags: [], chunkIndex: 0, content: 'x', vector: [1, 0, 0] }]);
  expect(await index.refreshStats()).toMatchObject({ denseIndex: { lists: 1, trainedAt: 1 } });
  await index.close();
});

const DIMS = 24;
const WORDS = (
  'wing flow boundary layer pressure shock supersonic heat transfer laminar turbulent mach number ' +
  'nozzle jet panel flutter buckling shell cylinder plate stress load vortex wake drag lift airfoil ' +
  'slender body cone blunt nose stagnation point skin friction temperature gas viscous inviscid'
).split(' ');

/** A corpus of documents in two workspaces, with tags and purposes, text drawn from a small vocabulary. */
function corpus(seed: number, docs: number): IndexedChunk[][] {
  const rand = rng(seed);
  const word = (): string => WORDS[Math.floor(rand() ** 2 * WORDS.length)];
  const vector = (): number[] => Array.from({ length: DIMS }, () => rand() * 2 - 1);
  return Array.from({ length: docs }, (_, d) =>
    Array.from({ length: 1 + (d % 4) }, (_, i) => ({
      workspaceId: d % 5 === 0 ? 'ws-small' : 'ws-large',
      documentId: `doc-${d}`,
      documentTitle: `${word()} ${word()} report ${d}`,
      purpose: d % 7 === 0 ? ('INSTRUCTION' as const) : ('KNOWLEDGE' as const),
      tags: d % 3 === 0 ? ['t-three'] : d % 2 === 0 ? ['t-two'] : [],
      chunkIndex: i,
      content: Array.from({ length: 30 + Math.floor(rand() * 40) }, word).join(' '),
      vector: vector(),
      ...(i % 2 === 0 ? { page: i + 1 } : { section: `Part ${i}` }),
    })),
  );
}

/** The same writes applied to any SearchIndex: upserts, a re-upsert, deletes, field changes. */
async function applyWrites(index: SearchIndex, docs: IndexedChunk[][]): Promise<void> {
  for (const chunks of docs) await index.upsertDocument(chunks[0].documentId, chunks);
  await index.upsertDocument('doc-4', docs[9].map((c) => ({ ...c, documentId: 'doc-4', workspaceId: docs[4][0].workspaceId })));
  await index.deleteDocument('doc-6');
  await index.updateDocumentFields('doc-8', { documentTitle: 'wing flutter retitled', tags: ['t-three'] });
  await index.updateDocumentFields('doc-11', { purpose: 'INSTRUCTION' });
  await index.setCheckpoint(42);
}

function requests(seed: number): SearchRequest[] {
  const rand = rng(seed);
  const out: SearchRequest[] = [];
  const texts = ['wing flutter', 'boundary layer heat transfer', 'shock', 'laminar turbulent skin friction temperature', 'supersonic cone nose', 'retitled', 'nothing matches zzz'];
  for (const text of texts) {
    const vector = Array.from({ length: DIMS }, () => rand() * 2 - 1);
    for (const mode of ['hybrid', 'bm25', 'dense'] as const) {
      out.push({ text, vector, mode, k: 8, filters: { workspaceId: 'ws-large' } });
      out.push({ text, vector, mode, k: 5, filters: { workspaceId: 'ws-small' } });
    }
    out.push({ text, vector, k: 6, filters: { workspaceId: 'ws-large', tags: ['t-three'] } });
    out.push({ text, vector, k: 6, filters: { workspaceId: 'ws-large', purpose: 'INSTRUCTION' } });
    out.push({ text, vector, k: 6, filters: { workspaceId: 'ws-large', documentIds: ['doc-1', 'doc-2', 'doc-4', 'doc-8'] } });
    out.push({ text, k: 4, filters: { workspaceId: 'ws-large' } });
  }
  return out;
}

describe('WorkerSearchIndex', () => {
  it('answers every search exactly as the in-thread index given the same writes', async () => {
    const docs = corpus(7, 60);
    const worker = await WorkerSearchIndex.open(freshFile());
    const inThread = new EmbeddedSearchIndex(freshFile());
    try {
      await applyWrites(worker, docs);
      await applyWrites(inThread, docs);
      const reqs = requests(11);
      let nonEmpty = 0;
      for (const r of reqs) {
        const expected = await inThread.search(r);
        if (expected.length > 0) nonEmpty++;
        expect(await worker.search(r)).toEqual(expected);
      }
      // The comparison is not of empty lists.
      expect(nonEmpty).toBeGreaterThan(reqs.length / 2);
      // Searches sent together (answered in whatever order the worker takes them) give the same answers.
      const together = await Promise.all(reqs.map((r) => worker.search(r)));
      for (let i = 0; i < reqs.length; i++) expect(together[i]).toEqual(await inThread.search(reqs[i]));
      for (const filters of [{ workspaceId: 'ws-large' }, { workspaceId: 'ws-large', tags: ['t-three'] }, { workspaceId: 'ws-small', purpose: 'INSTRUCTION' as const }, { workspaceId: 'nope' }]) {
        expect(await worker.countDocuments(filters)).toBe(await inThread.countDocuments(filters));
      }
      expect(await worker.getCheckpoint()).toBe(42);
      expect((await worker.refreshStats()).chunks).toBe(inThread.stats().chunks);
    } finally {
      await worker.close();
      await inThread.close();
    }
  });

  it('is replaced when its thread dies: calls after the crash are answered by a new worker on the same file', async () => {
    const docs = corpus(3, 20);
    let crashed!: () => void;
    const crash = new Promise<void>((resolve) => (crashed = resolve));
    const index = await WorkerSearchIndex.open(freshFile(), { onCrash: () => crashed() });
    try {
      for (const chunks of docs) await index.upsertDocument(chunks[0].documentId, chunks);
      const request = requests(5)[0];
      const before = await index.search(request);
      expect(before.length).toBeGreaterThan(0);
      await index.crashForTest();
      await crash;
      expect(index.restartCount).toBe(1);
      expect(await index.search(request)).toEqual(before);
      expect(index.running).toBe(true);
      await index.upsertDocument('late', [{ ...docs[0][0], documentId: 'late', content: 'a late chunk about stagnation' }]);
      expect((await index.search({ text: 'late chunk stagnation', k: 3, mode: 'bm25', filters: { workspaceId: docs[0][0].workspaceId } }))[0].documentId).toBe('late');
    } finally {
      await index.close();
    }
  });

  it('shuts down cleanly: calls sent before close are answered, later ones refused, the thread ends', async () => {
    const file = freshFile();
    const docs = corpus(9, 12);
    const index = await WorkerSearchIndex.open(file);
    for (const chunks of docs) await index.upsertDocument(chunks[0].documentId, chunks);
    const request = requests(13)[0];
    const expected = await index.search(request);
    const sentBefore = index.search(request);
    const writeBefore = index.setCheckpoint(7);
    await index.close();
    await expect(sentBefore).resolves.toEqual(expected);
    await expect(writeBefore).resolves.toBeUndefined();
    await expect(index.search(request)).rejects.toThrow('closed');
    expect(index.running).toBe(false);
    await index.close(); // twice is fine
    // Everything it wrote is in the file.
    const reopened = new EmbeddedSearchIndex(file);
    try {
      expect(await reopened.getCheckpoint()).toBe(7);
      expect(await reopened.search(request)).toEqual(expected);
    } finally {
      await reopened.close();
    }
  });

  it('refuses calls past its bound with 503 SERVICE_UNAVAILABLE', async () => {
    const index = await WorkerSearchIndex.open(freshFile(), { maxPending: 2 });
    try {
      const request: SearchRequest = { text: 'wing', k: 3, filters: { workspaceId: 'w' } };
      const first = index.search(request);
      const second = index.search(request);
      await expect(index.search(request)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      await expect(first).resolves.toEqual([]);
      await expect(second).resolves.toEqual([]);
      await expect(index.search(request)).resolves.toEqual([]);
    } finally {
      await index.close();
    }
  });

  it('says so when the worker script is not built', async () => {
    await expect(WorkerSearchIndex.open(freshFile(), { workerPath: path.join(dir, 'not-built.js') })).rejects.toThrow(/not built.*KB_SEARCH_THREAD=main/);
  });

  it('fails to open with the reason when the file cannot be opened, leaving no thread behind', async () => {
    await expect(WorkerSearchIndex.open(path.join(dir, 'missing-dir', 'x', 'index.sqlite'))).rejects.toThrow(/search worker exited/);
  });
});

describe('CallQueue (the order the worker serves waiting calls in)', () => {
  const drain = (q: CallQueue<{ method: WorkerMethod; n: number }>): number[] => {
    const order: number[] = [];
    for (let c = q.shift(); c; c = q.shift()) order.push(c.n);
    return order;
  };

  it('lets reads jump waiting writes, then alternates while both wait; each kind in arrival order', () => {
    const q = new CallQueue<{ method: WorkerMethod; n: number }>();
    const calls: [WorkerMethod, number][] = [
      ['upsertDocument', 1], ['setCheckpoint', 2], ['upsertDocument', 3], ['search', 4], ['deleteDocument', 5], ['countDocuments', 6], ['search', 7], ['getCheckpoint', 8], ['clear', 9],
    ];
    for (const [method, n] of calls) q.push({ method, n });
    expect(q.size).toBe(9);
    expect(drain(q)).toEqual([4, 1, 6, 2, 7, 3, 8, 5, 9]);
    expect(q.size).toBe(0);
  });

  it('never starves writes behind a steady stream of reads', () => {
    const q = new CallQueue<{ method: WorkerMethod; n: number }>();
    q.push({ method: 'upsertDocument', n: 0 });
    const served: number[] = [];
    for (let i = 1; i <= 5; i++) {
      q.push({ method: 'search', n: i });
      q.push({ method: 'search', n: 100 + i });
      served.push(q.shift()!.n);
    }
    // The write waited for one read only.
    expect(served.slice(0, 2)).toEqual([1, 0]);
    expect(drain(q).every((n) => n !== 0)).toBe(true);
  });
});
