/**
 * The search index's worker thread, cold against warmed up (src/roles/rehearsal.ts warms it on
 * a throwaway in-memory index of that thread before /readyz says ready): the time of the first
 * index update (a small document's chunks, as the first upload sends them) and of the first
 * search on a fresh thread, with and without `warmUp` before them, against the tenth.
 * Alternates the two kinds of thread, each fresh, `--rounds N` times (default 8); prints the
 * medians and the load average. Times are wall-clock from the caller (a call's CPU on one
 * thread is below /proc's 10 ms resolution), so run it on a quiet machine.
 *
 *   node dist/bench/searchThreadWarmup.js [--rounds 8]
 */
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { WorkerSearchIndex } from '../src/adapters/embedded/workerSearchIndex';
import type { IndexedChunk, SearchRequest } from '../src/ports/searchIndex';

const DIMS = 100;
const MODEL = 'local:glove-sif-bench';

function vector(seed: number): Float32Array {
  const v = new Float32Array(DIMS);
  let x = seed * 2654435761;
  for (let i = 0; i < DIMS; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    v[i] = x / 2147483648 - 0.5;
  }
  return v;
}

const WORDS = 'wing lift drag flutter boundary layer shock wave pressure nozzle flow heat transfer supersonic subsonic panel buckling'.split(' ');

function document(workspaceId: string, n: number): { id: string; chunks: IndexedChunk[] } {
  const id = randomUUID();
  const chunks = Array.from({ length: 3 }, (_, i) => ({
    workspaceId,
    documentId: id,
    documentTitle: `Note ${n}`,
    purpose: 'KNOWLEDGE' as const,
    tags: [],
    chunkIndex: i,
    content: Array.from({ length: 40 }, (_, w) => WORDS[(n * 7 + i * 3 + w) % WORDS.length]).join(' '),
    vector: vector(n * 10 + i + 1),
    model: MODEL,
  }));
  return { id, chunks };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const load = (): string => os.loadavg().map((l) => l.toFixed(1)).join(' ');

async function oneThread(dir: string, warm: boolean): Promise<{ first: number; tenth: number; search: number; searchTenth: number }> {
  const index = await WorkerSearchIndex.open(path.join(dir, `${randomUUID()}.db`));
  try {
    const workspaceId = randomUUID();
    if (warm) {
      const sample = document(randomUUID(), 999);
      const query: SearchRequest = { text: 'wing flutter', vector: vector(7), filters: { workspaceId: sample.chunks[0].workspaceId }, k: 5, vectorModel: MODEL };
      await index.warmUp({ chunks: sample.chunks, query });
    }
    const updates: number[] = [];
    const searches: number[] = [];
    for (let n = 0; n < 10; n++) {
      const d = document(workspaceId, n);
      let t0 = performance.now();
      await index.upsertDocument(d.id, d.chunks);
      await index.setCheckpoint(n + 1);
      updates.push(performance.now() - t0);
      t0 = performance.now();
      await index.search({ text: `${WORDS[n]} ${WORDS[n + 3]}`, vector: vector(100 + n), filters: { workspaceId }, k: 10, vectorModel: MODEL });
      searches.push(performance.now() - t0);
    }
    return { first: updates[0], tenth: updates[9], search: searches[0], searchTenth: searches[9] };
  } finally {
    await index.close();
  }
}

async function main(): Promise<void> {
  const i = process.argv.indexOf('--rounds');
  const rounds = i > 0 ? Number(process.argv[i + 1]) : 8;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kb-bench-warm-'));
  const cold: Awaited<ReturnType<typeof oneThread>>[] = [];
  const warm: Awaited<ReturnType<typeof oneThread>>[] = [];
  try {
    console.log(`search index thread, cold vs warmed up (load ${load()}):`);
    for (let r = 0; r < rounds; r++) {
      cold.push(await oneThread(dir, false));
      warm.push(await oneThread(dir, true));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const show = (name: string, xs: Awaited<ReturnType<typeof oneThread>>[]) =>
    console.log(
      `  ${name}: first index update ${median(xs.map((x) => x.first)).toFixed(2)} ms (10th ${median(xs.map((x) => x.tenth)).toFixed(2)}), first search ${median(xs.map((x) => x.search)).toFixed(2)} ms (10th ${median(xs.map((x) => x.searchTenth)).toFixed(2)}); medians of ${xs.length} fresh threads`,
    );
  show('cold     ', cold);
  show('warmed up', warm);
  console.log(`  (load ${load()})`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
