/**
 * Search speed and memory of the embedded index.
 *
 *   node dist/bench/search.js [--sizes 10000,100000] [--queries 200] [--no-embed] [--keep DIR] [--only REGEX]
 *
 * --keep DIR builds each index once in DIR/<size> and reuses it later (the recall check needs a
 * fresh build); --only runs just the cases whose name matches (e.g. 'hybrid\+prf|tag').
 *
 * Builds file-backed indexes (temp dir) of synthetic chunks (random unit vectors of 512 dims, text drawn from a
 * Zipf-distributed vocabulary) in one large workspace plus a small one (500 chunks written among
 * the large one's) and prints search latency p50/p95 per mode, with and without feedback (+prf),
 * (query vectors are precomputed: embedding time excluded), recall@10 of the int8 dense
 * scan against exact float search, memory per 100k chunks, and the local provider's query
 * embedding time, cold and cached.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedSearchIndex } from '../src/adapters/embedded/embeddedSearchIndex';
import { CachedEmbeddings } from '../src/adapters/embeddings/cachedEmbeddings';
import { LocalEmbeddings } from '../src/adapters/embeddings/localEmbeddings';
import type { IndexedChunk } from '../src/ports/searchIndex';

const DIMS = 512;
const SMALL_DOCS = 125;
/** Feedback measured when the default has none. */
const BENCH_PRF = { docs: 5, terms: 10, originalWeight: 0.7, maxDocFrequency: 0.1, denseWeight: 0 };

function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function gaussian(rand: () => number): number {
  return Math.sqrt(-2 * Math.log(rand() + 1e-12)) * Math.cos(2 * Math.PI * rand());
}

function unitVector(rand: () => number): Float32Array {
  const v = new Float32Array(DIMS);
  let s = 0;
  for (let i = 0; i < DIMS; i++) {
    v[i] = gaussian(rand);
    s += v[i] * v[i];
  }
  const inv = 1 / Math.sqrt(s);
  for (let i = 0; i < DIMS; i++) v[i] *= inv;
  return v;
}

/** Synthetic vocabulary of 20k pronounceable words, sampled with a Zipf(1) law. */
function makeVocabulary(rand: () => number): { words: string[]; sample: () => string } {
  const syll = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'pa', 'qu', 'dr', 'en', 'is', 'or', 'um'];
  const words = new Set<string>();
  while (words.size < 20000) {
    let w = '';
    const n = 2 + Math.floor(rand() * 3);
    for (let i = 0; i < n; i++) w += syll[Math.floor(rand() * syll.length)];
    words.add(w);
  }
  const list = [...words];
  const cdf = new Float64Array(list.length);
  let acc = 0;
  for (let i = 0; i < list.length; i++) cdf[i] = acc += 1 / (i + 1);
  const sample = (): string => {
    const x = rand() * acc;
    let lo = 0;
    let hi = cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return list[lo];
  };
  return { words: list, sample };
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
const ms = (x: number): string => `${x.toFixed(2)} ms`;
const mb = (x: number): string => `${(x / 1048576).toFixed(0)} MB`;

interface BenchOptions {
  sizes?: number[];
  queries?: number;
  embed?: boolean;
  /** Keep the built index in this directory and reuse it on later runs (no recall check then). */
  keep?: string;
  /** Only the runs whose name matches. */
  only?: RegExp;
}

async function benchSize(n: number, queries: number, options: BenchOptions = {}): Promise<void> {
  const rand = rng(n);
  const vocab = makeVocabulary(rand);
  if (global.gc) global.gc();
  const before = process.memoryUsage();
  const dir = options.keep ? path.join(options.keep, String(n)) : fs.mkdtempSync(path.join(os.tmpdir(), 'kb-bench-'));
  const reuse = options.keep !== undefined && fs.existsSync(path.join(dir, 'index.sqlite'));
  fs.mkdirSync(dir, { recursive: true });
  const index = new EmbeddedSearchIndex(path.join(dir, 'index.sqlite'));
  const exact = new Float32Array(reuse ? 0 : n * DIMS); // reference copy for recall, excluded from memory figures
  const perDoc = 4;
  let smallDocs = 0;
  const started = Date.now();
  for (let d = 0; !reuse && d < n / perDoc; d++) {
    const chunks: IndexedChunk[] = [];
    for (let c = 0; c < perDoc; c++) {
      const v = unitVector(rand);
      exact.set(v, (d * perDoc + c) * DIMS);
      const words = Array.from({ length: 120 }, vocab.sample).join(' ');
      chunks.push({
        workspaceId: 'bench', documentId: `doc-${d}`, documentTitle: `Document ${d} ${vocab.sample()}`, purpose: 'KNOWLEDGE',
        tags: d % 10 === 0 ? ['t-ten'] : [], chunkIndex: c, content: words, vector: v,
      });
    }
    await index.upsertDocument(`doc-${d}`, chunks);
    // A small workspace (500 chunks) written among the large one's documents.
    if (d % Math.floor(n / perDoc / SMALL_DOCS) === 0 && smallDocs < SMALL_DOCS) {
      const id = `small-${smallDocs++}`;
      await index.upsertDocument(
        id,
        Array.from({ length: perDoc }, (_, c) => ({
          workspaceId: 'small', documentId: id, documentTitle: `Small ${id}`, purpose: 'KNOWLEDGE' as const, tags: [], chunkIndex: c,
          content: Array.from({ length: 120 }, vocab.sample).join(' '), vector: unitVector(rand),
        })),
      );
    }
  }
  const buildMs = Date.now() - started;
  if (global.gc) global.gc();
  const after = process.memoryUsage();
  const exactBytes = exact.byteLength;
  console.log(`\n== ${n} chunks (${reuse ? `reused ${dir}, opened` : 'built'} in ${(buildMs / 1000).toFixed(1)} s)`);
  const rssDelta = after.rss - before.rss - exactBytes;
  const extDelta = after.arrayBuffers - before.arrayBuffers - exactBytes;
  // The reference float32 copy kept for the recall check is subtracted from every figure.
  console.log(`memory: process RSS ${mb(after.rss - exactBytes)} (Δ ${mb(rssDelta)} while building), heap used ${mb(after.heapUsed)}, ` +
    `array buffers Δ ${mb(extDelta)}; int8 vectors in WebAssembly memory ${mb(index.stats().vectorBytes)}`);

  const qrand = rng(n + 1);
  const qs = Array.from({ length: queries }, () => ({
    // Query text: 3–6 words of Zipf rank 50–5000 (each in ~0.2–25% of chunks: the
    // most frequent ranks play the part of stopwords, which queries drop).
    text: Array.from({ length: 3 + Math.floor(qrand() * 4) }, () => vocab.words[50 + Math.floor(qrand() * 4950)]).join(' '),
    vector: unitVector(qrand),
  }));
  const defaults = index.hybridConfig;
  const noPrf = { ...defaults, prf: { ...defaults.prf, docs: 0 } };
  const runs: { name: string; mode: 'hybrid' | 'bm25' | 'dense'; workspaceId: string; prf: boolean }[] = [];
  for (const workspaceId of ['bench', 'small']) {
    for (const mode of ['hybrid', 'bm25', 'dense'] as const) {
      for (const prf of [false, true]) runs.push({ name: `${workspaceId === 'small' ? 'small ws ' : ''}${mode}${prf ? '+prf' : ''}`, mode, workspaceId, prf });
    }
  }
  console.log(`(small ws: ${SMALL_DOCS * perDoc} chunks among the others; +prf: ${JSON.stringify(defaults.prf.docs > 0 ? defaults.prf : BENCH_PRF)})`);
  for (const run of runs) {
    if (options.only && !options.only.test(run.name)) continue;
    index.configure(run.prf ? { ...defaults, prf: defaults.prf.docs > 0 ? defaults.prf : BENCH_PRF } : noPrf);
    const search = (q: { text: string; vector: Float32Array }): Promise<unknown> =>
      index.search({ text: q.text, vector: q.vector, filters: { workspaceId: run.workspaceId }, k: 10, mode: run.mode });
    for (const q of qs.slice(0, 10)) await search(q);
    const times: number[] = [];
    for (const q of qs) {
      const t = process.hrtime.bigint();
      await search(q);
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    console.log(`${run.name.padEnd(20)} k=10: p50 ${ms(pct(times, 0.5))}  p95 ${ms(pct(times, 0.95))}`);
  }
  index.configure(defaults);
  if (!options.only || options.only.test('tag filter')) {
    const times: number[] = [];
    for (const q of qs.slice(0, 50)) {
      const t = process.hrtime.bigint();
      await index.search({ text: q.text, vector: q.vector, filters: { workspaceId: 'bench', tags: ['t-ten'] }, k: 10 });
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    console.log(`hybrid with tag filter (10% of docs): p50 ${ms(pct(times, 0.5))}  p95 ${ms(pct(times, 0.95))}`);
  }

  if (reuse || options.only) {
    await index.close();
    if (!options.keep) fs.rmSync(dir, { recursive: true, force: true });
    return;
  }
  // Recall@10 of the dense path (int8 scan + exact re-scoring) vs exact float32 search.
  let found = 0;
  const recallQueries = qs.slice(0, 50);
  for (const q of recallQueries) {
    const scores = new Float32Array(n);
    for (let r = 0; r < n; r++) {
      let s = 0;
      const o = r * DIMS;
      for (let i = 0; i < DIMS; i++) s += exact[o + i] * q.vector[i];
      scores[r] = s;
    }
    const top = Array.from(scores.keys()).sort((a, b) => scores[b] - scores[a]).slice(0, 10);
    const truth = new Set(top.map((r) => `doc-${Math.floor(r / perDoc)}#${r % perDoc}`));
    const hits = await index.search({ text: '', vector: q.vector, filters: { workspaceId: 'bench' }, k: 10, mode: 'dense' });
    found += hits.filter((h) => truth.has(`${h.documentId}#${h.chunkIndex}`)).length;
  }
  console.log(`dense recall@10 vs exact float32: ${(found / (recallQueries.length * 10)).toFixed(4)}`);
  await index.close();
  if (!options.keep) fs.rmSync(dir, { recursive: true, force: true });
}

async function benchQueryEmbedding(): Promise<void> {
  const provider = new CachedEmbeddings(new LocalEmbeddings({ threads: 1 }));
  try {
    const t = Date.now();
    await provider.embed(['first query loads the model']);
    console.log(`\nquery embedding (local, 1 worker): model start + first query ${Date.now() - t} ms`);
    const texts = Array.from({ length: 20 }, (_, i) => `how does the boundary layer behave at mach ${i + 2} on a swept wing`);
    const cold: number[] = [];
    for (const text of texts) {
      const s = process.hrtime.bigint();
      await provider.embed([text]);
      cold.push(Number(process.hrtime.bigint() - s) / 1e6);
    }
    const cached: number[] = [];
    for (const text of texts) {
      const s = process.hrtime.bigint();
      await provider.embed([text]);
      cached.push(Number(process.hrtime.bigint() - s) / 1e6);
    }
    console.log(`query embedding cold (new text): p50 ${ms(pct(cold, 0.5))}  p95 ${ms(pct(cold, 0.95))}`);
    console.log(`query embedding cached (repeated text): p50 ${ms(pct(cached, 0.5))}  p95 ${ms(pct(cached, 0.95))}`);
  } finally {
    await provider.close();
  }
}

export async function benchSearch(options: BenchOptions = {}): Promise<void> {
  const sizes = options.sizes ?? [10_000, 100_000];
  console.log(`search benchmark: ${DIMS}-dim random unit vectors, synthetic text, one large and one small workspace; node ${process.version}`);
  for (const n of sizes) await benchSize(n, options.queries ?? 200, options);
  if (options.embed !== false) await benchQueryEmbedding();
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const arg = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  benchSearch({
    sizes: arg('--sizes')?.split(',').map(Number),
    queries: arg('--queries') ? Number(arg('--queries')) : undefined,
    embed: !args.includes('--no-embed'),
    keep: arg('--keep'),
    only: arg('--only') ? new RegExp(arg('--only')!) : undefined,
  }).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
