/**
 * Search speed, memory and start-up of the embedded index.
 *
 *   node --expose-gc dist/bench/search.js [--sizes 10000,100000] [--queries 150] [--keep DIR] [--only REGEX] [--crash-startup] [--text-startup]
 *   npm run bench -- search                          (10k and 100k, a few minutes)
 *   npm run bench -- search --sizes 1000000 --keep /tmp/kb-bench   (1M: the build takes minutes, kept for later runs)
 *
 * Corpus: one large workspace `bench` of n chunks (4 per document; every tenth document tagged
 * `t-ten`) plus three small workspaces of 500 chunks each written among its documents. Chunk
 * text: 120 words, 70 % drawn from one random Cranfield abstract (../shared/eval/cranfield, so
 * chunks are about something) and 30 % from the whole collection's word distribution; titles
 * from Cranfield titles. Vectors: the default embedder itself (GloVe-SIF 100-d, the converted
 * vectors of KB_MODEL_CACHE_DIR or the repo's cache), run on every chunk's text. Queries: the
 * 225 Cranfield queries, embedded by the same embedder.
 *
 * The index is built in a child process (bulk `upsertDocuments`, 256 documents per
 * transaction), then opened here as the server opens it after a clean stop (the lexical index
 * from its snapshot): that open is the start-up time, and the process RSS afterwards (embedder
 * loaded, queries run) is the memory figure. At the end the open is timed again as after
 * kill -9 following writes (the older snapshot caught up; up to 100k chunks, above with
 * --crash-startup) and without a usable snapshot (rebuilt from the text; up to 100k, above with
 * --text-startup).
 *
 * Measured: a new query's search with its embedding (the first 75 Cranfield queries, never
 * seen before by the embedder's cache or the index), then p50/p95 of each mode with and without
 * feedback (the other 150 queries, precomputed vectors), hybrid with a tag filter, and the
 * dense recall@10 against an exact float32 scan of the stored vectors (above 20,000 chunks the
 * dense leg is approximate: ivfIndex.ts), also with the tag filter, and the approximate dense
 * leg against the exact scan interleaved query by query (latency, and the overlap of the default
 * hybrid's top 10 with the exact scan's); `crossover` times both on scopes of growing size
 * (random documents of the large workspace); `probe` times the approximate dense leg at several
 * probe depths (KB_DENSE_INDEX_PROBE_LISTS) against the exact scan. Each latency is wall time
 * (the figure) with the process's CPU time beside it (on a shared machine the wall time includes
 * waiting for a core; the CPU time is what the search cost).
 * --keep DIR builds each size once in DIR/<size> and reuses it; --only runs just the cases whose
 * name matches (e.g. 'hybrid\+prf|tag').
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { EmbeddedSearchIndex } from '../src/adapters/embedded/embeddedSearchIndex';
import { PRUNE_MIN_POSTINGS } from '../src/adapters/embedded/lexicalIndex';
import { DEFAULT_ANN } from '../src/adapters/embedded/ivfIndex';
import { CachedEmbeddings } from '../src/adapters/embeddings/cachedEmbeddings';
import { modelCacheDirs } from '../src/adapters/embeddings/factory';
import { GloveSifEmbeddings } from '../src/adapters/embeddings/gloveSifEmbeddings';
import type { IndexedChunk } from '../src/ports/searchIndex';
import { repoRoot } from '../src/util/paths';
import { figure } from './targets';
import { mulberry32 as rng } from '../src/util/random';

const PER_DOC = 4;
const WORDS = 120;
const SMALL_WORKSPACES = 3;
const SMALL_DOCS = 125; // 500 chunks each
const BATCH_DOCS = 256;
/** Queries whose first search (embedding included) is measured; the rest are the mode runs'. */
const NEW_QUERIES = 75;
const RECALL_QUERIES = 50;

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
const ms = (x: number): string => `${x.toFixed(2)} ms`;
const mb = (x: number): string => `${(x / 1048576).toFixed(0)} MB`;
/** CPU time (user + system) of this process since `since`, in ms: on a loaded machine, closer to what the work costs than wall time. */
const cpuMs = (since: NodeJS.CpuUsage): number => {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1000;
};
const load = (): string => os.loadavg().map((l) => l.toFixed(2)).join(' ');

function cranfieldDir(): string {
  const candidates = [process.env.KB_CRANFIELD_DIR, path.join(repoRoot, '..', 'shared', 'eval', 'cranfield'), '/work/shared/eval/cranfield'];
  const dir = candidates.find((d): d is string => !!d && fs.existsSync(path.join(d, 'documents.json')));
  if (!dir) throw new Error('Cranfield collection not found (../shared/eval/cranfield or KB_CRANFIELD_DIR)');
  return dir;
}

interface Corpus {
  docs: string[][];
  titles: string[];
  all: string[];
  queries: string[];
}

function readCorpus(): Corpus {
  const dir = cranfieldDir();
  const raw = JSON.parse(fs.readFileSync(path.join(dir, 'documents.json'), 'utf8')) as { title: string; body: string }[];
  const words = (t: string): string[] => t.toLowerCase().match(/[a-z][a-z0-9-]*/g) ?? [];
  const docs = raw.map((d) => words(d.body)).filter((w) => w.length > 20);
  const queries = (JSON.parse(fs.readFileSync(path.join(dir, 'queries.json'), 'utf8')) as { text: string }[]).map((q) => q.text.replace(/\s+\.\s*$/, ''));
  return { docs, titles: raw.map((d) => d.title.replace(/\s+\.\s*$/, '')), all: docs.flat(), queries };
}

function embedder(): GloveSifEmbeddings {
  return new GloveSifEmbeddings({ cacheDirs: modelCacheDirs(undefined, process.env.KB_MODEL_CACHE_DIR) });
}

// ------------------------------------------------------------------ build (child process)

async function build(dir: string, n: number): Promise<void> {
  const corpus = readCorpus();
  const rand = rng(n);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
  const text = (): string => {
    const topic = pick(corpus.docs);
    const out = new Array<string>(WORDS);
    for (let i = 0; i < WORDS; i++) out[i] = rand() < 0.7 ? pick(topic) : pick(corpus.all);
    return out.join(' ');
  };
  const model = embedder();
  await model.warmup();
  const index = new EmbeddedSearchIndex(path.join(dir, 'index.sqlite'));
  const started = Date.now();
  let embedMs = 0;
  const docs = n / PER_DOC;
  const smallEvery = Math.max(1, Math.floor(docs / SMALL_DOCS));
  let smallDocs = 0;
  let batch: { documentId: string; chunks: IndexedChunk[] }[] = [];
  const flush = async (): Promise<void> => {
    const chunks = batch.flatMap((b) => b.chunks);
    const t = Date.now();
    const vectors = await model.embed(chunks.map((c) => `${c.documentTitle}\n${c.content}`));
    embedMs += Date.now() - t;
    chunks.forEach((c, i) => (c.vector = vectors[i]));
    await index.upsertDocuments(batch);
    batch = [];
  };
  const doc = (documentId: string, workspaceId: string, tags: string[]): void => {
    const title = pick(corpus.titles);
    batch.push({
      documentId,
      chunks: Array.from({ length: PER_DOC }, (_, c) => ({
        workspaceId, documentId, documentTitle: title, purpose: 'KNOWLEDGE' as const, tags, chunkIndex: c, content: text(), vector: [],
      })),
    });
  };
  for (let d = 0; d < docs; d++) {
    doc(`doc-${d}`, 'bench', d % 10 === 0 ? ['t-ten'] : []);
    // Small workspaces written among the large one's documents.
    if (d % smallEvery === 0 && smallDocs < SMALL_DOCS) {
      for (let w = 0; w < SMALL_WORKSPACES; w++) doc(`small-${w}-${smallDocs}`, `small-${w}`, []);
      smallDocs++;
    }
    if (batch.length >= BATCH_DOCS) await flush();
    if (d > 0 && d % 25_000 === 0) console.log(`  built ${d * PER_DOC} chunks, ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
  await flush();
  await index.close();
  const s = (Date.now() - started) / 1000;
  console.log(`built ${n} chunks (+${SMALL_WORKSPACES} × ${SMALL_DOCS * PER_DOC} small) in ${s.toFixed(1)} s ` +
    `(${Math.round(n / s)} chunks/s, of which embedding ${(embedMs / 1000).toFixed(1)} s; load average ${load()})`);
  await model.close();
}

function buildInChild(dir: string, n: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = fork(__filename, ['--build', dir, '--size', String(n)], { stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`index build exited with ${code}`))));
  });
}

// ------------------------------------------------------------------ measure

interface BenchOptions {
  sizes?: number[];
  queries?: number;
  /** Keep the built index in this directory and reuse it on later runs. */
  keep?: string;
  /** Only the runs whose name matches. */
  only?: RegExp;
  /** Also time a start-up after kill -9 above 100k chunks (the lexical snapshot caught up). */
  crashStartup?: boolean;
  /** Also time a start-up without a usable lexical snapshot above 100k chunks (rebuilt from the text: minutes at 1M). */
  textStartup?: boolean;
}

const label = (n: number): string => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`);

async function benchSize(n: number, options: BenchOptions): Promise<void> {
  const dir = options.keep ? path.join(options.keep, String(n)) : fs.mkdtempSync(path.join(os.tmpdir(), 'kb-bench-'));
  const file = path.join(dir, 'index.sqlite');
  const reuse = options.keep !== undefined && fs.existsSync(file);
  fs.mkdirSync(dir, { recursive: true });
  console.log(`\n== ${n} chunks`);
  if (reuse) console.log(`reusing ${dir}`);
  else await buildInChild(dir, n);

  const corpus = readCorpus();
  const provider = new CachedEmbeddings(embedder(), { maxEntries: 1000 });
  await provider.warmup();
  if (global.gc) global.gc();
  const rssBefore = process.memoryUsage().rss;
  // Start-up: the server opens the file and loads the in-memory side (catalog, vectors).
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const index = new EmbeddedSearchIndex(file);
  const startupS = Number(process.hrtime.bigint() - t0) / 1e9;
  const lexical = index.stats().lexicalFrom === 'snapshot' ? 'lexical index from its snapshot' : 'lexical index rebuilt from the text (no valid snapshot)';
  const ivf = index.stats().denseIndex;
  const dense = ivf ? `approximate dense index of ${ivf.lists} lists ${ivf.from === 'file' ? 'read from its file' : ivf.from === 'caught-up' ? 'caught up from its older file' : 'trained (no valid file)'}` : 'no approximate dense index';
  console.log(`start-up (open + load ${index.stats().chunks} chunks, ${lexical}, ${dense}; file ${mb(fs.statSync(file).size)}, OS page cache warm): ` +
    `${startupS.toFixed(2)} s (CPU ${(cpuMs(c0) / 1000).toFixed(2)} s; load average ${load()})`);
  if (n === 1_000_000) figure('search', `start-up, load the index at ${label(n)}`, startupS, 's', { kind: 'max', value: 30 });

  const newQueries = corpus.queries.slice(0, NEW_QUERIES);
  const runQueries = corpus.queries.slice(NEW_QUERIES, NEW_QUERIES + (options.queries ?? 150));
  const runVectors = await provider.embed(runQueries);
  const qs = runQueries.map((text, i) => ({ text, vector: runVectors[i] }));
  const search = (q: { text: string; vector: Float32Array }, workspaceId: string, mode: 'hybrid' | 'bm25' | 'dense', tags?: string[]): Promise<unknown> =>
    index.search({ text: q.text, vector: q.vector, filters: { workspaceId, ...(tags ? { tags } : {}) }, k: 10, mode });
  // Warm-up: JIT and SQLite's pages, as on a server that has answered a few searches.
  for (const q of qs.slice(0, 10)) await search(q, 'bench', 'hybrid');

  if (!options.only || options.only.test('new query')) {
    // A query never seen before: embedding (through the cache, a miss) and the default search.
    const times: number[] = [];
    const cpu: number[] = [];
    const embedTimes: number[] = [];
    for (const text of newQueries) {
      const c = process.cpuUsage();
      const t = process.hrtime.bigint();
      const [vector] = await provider.embed([text]);
      const e = process.hrtime.bigint();
      await index.search({ text, vector, filters: { workspaceId: 'bench' }, k: 10, mode: 'hybrid' });
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
      cpu.push(cpuMs(c));
      embedTimes.push(Number(e - t) / 1e6);
    }
    console.log(`new query (embedding + default hybrid+feedback, ${newQueries.length} queries): p50 ${ms(pct(times, 0.5))}  p95 ${ms(pct(times, 0.95))} (CPU p50 ${ms(pct(cpu, 0.5))}); ` +
      `its embedding p50 ${ms(pct(embedTimes, 0.5))}  p95 ${ms(pct(embedTimes, 0.95))}`);
    if (n === 100_000) figure('search', `new query search p50 at ${label(n)} (embedding incl.)`, pct(times, 0.5), 'ms', { kind: 'max', value: 20 });
  }

  const defaults = index.hybridConfig;
  const noPrf = { ...defaults, prf: { ...defaults.prf, docs: 0 } };
  const runs: { name: string; mode: 'hybrid' | 'bm25' | 'dense'; workspaceId: string; prf: boolean; tags?: string[] }[] = [];
  for (const workspaceId of ['bench', 'small-0']) {
    for (const mode of ['hybrid', 'bm25', 'dense'] as const) {
      for (const prf of mode === 'dense' ? [false] : [false, true]) {
        runs.push({ name: `${workspaceId === 'bench' ? '' : 'small ws '}${mode}${prf ? '+prf' : ''}`, mode, workspaceId, prf });
      }
    }
  }
  runs.push({ name: 'hybrid+prf, tag filter (10% of docs)', mode: 'hybrid', workspaceId: 'bench', prf: true, tags: ['t-ten'] });
  console.log(`(small ws: ${SMALL_DOCS * PER_DOC} chunks, one of ${SMALL_WORKSPACES} beside the large one; +prf is the default: ${JSON.stringify(defaults.prf)})`);
  for (const run of runs) {
    if (options.only && !options.only.test(run.name)) continue;
    index.configure(run.prf ? defaults : noPrf);
    for (const q of qs.slice(0, 5)) await search(q, run.workspaceId, run.mode, run.tags);
    const times: number[] = [];
    const cpu: number[] = [];
    for (const q of qs) {
      const c = process.cpuUsage();
      const t = process.hrtime.bigint();
      await search(q, run.workspaceId, run.mode, run.tags);
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
      cpu.push(cpuMs(c));
    }
    const p50 = pct(times, 0.5);
    console.log(`${run.name.padEnd(38)} k=10: p50 ${ms(p50)}  p95 ${ms(pct(times, 0.95))}  (CPU p50 ${ms(pct(cpu, 0.5))}; load average ${load()})`);
    if (run.name === 'hybrid+prf' && n === 100_000) figure('search', `default hybrid p50 at ${label(n)}`, p50, 'ms', { kind: 'max', value: 8 });
    if (run.name === 'hybrid+prf' && n === 1_000_000) figure('search', `default hybrid p50 at ${label(n)}`, p50, 'ms', { kind: 'max', value: 50 });
  }
  index.configure(defaults);

  // The lexical leg before and after issue 13's pruning (exact MaxScore) and feedback from the
  // postings, query by query in alternating order under the same conditions; the hits must
  // be the same.
  const abRuns = runs.filter((r) => r.workspaceId === 'bench' && r.mode !== 'dense').map((r) => ({ ...r, name: `lexical before/after: ${r.name}` }));
  for (const run of abRuns) {
    if (options.only && !options.only.test(run.name)) continue;
    index.configure(run.prf ? defaults : noPrf);
    const before = { pruneMinPostings: Infinity, feedbackFromText: true };
    const after = { pruneMinPostings: PRUNE_MIN_POSTINGS, feedbackFromText: false };
    const time: Record<'before' | 'after', { wall: number[]; cpu: number[] }> = { before: { wall: [], cpu: [] }, after: { wall: [], cpu: [] } };
    let differ = 0;
    const pruning0 = index.lexicalPruning;
    for (const q of qs.slice(0, 5)) for (const how of [before, after]) {
      index.tuneLexical(how);
      await search(q, run.workspaceId, run.mode, run.tags);
    }
    const load0 = load();
    for (let i = 0; i < qs.length; i++) {
      const hits: Record<'before' | 'after', string> = { before: '', after: '' };
      for (const which of i % 2 === 0 ? (['before', 'after'] as const) : (['after', 'before'] as const)) {
        index.tuneLexical(which === 'before' ? before : after);
        const c = process.cpuUsage();
        const t = process.hrtime.bigint();
        const res = (await search(qs[i], run.workspaceId, run.mode, run.tags)) as { documentId: string; chunkIndex: number; score: number }[];
        time[which].wall.push(Number(process.hrtime.bigint() - t) / 1e6);
        time[which].cpu.push(cpuMs(c));
        hits[which] = JSON.stringify(res.map((h) => [h.documentId, h.chunkIndex, h.score]));
      }
      if (hits.before !== hits.after) differ++;
    }
    const pr = index.lexicalPruning;
    const read = pr.postingsTotal > pruning0.postingsTotal ? (pr.postingsRead - pruning0.postingsRead) / (pr.postingsTotal - pruning0.postingsTotal) : 1;
    const f = (w: { wall: number[]; cpu: number[] }): string => `p50 ${ms(pct(w.wall, 0.5))} p95 ${ms(pct(w.wall, 0.95))} (CPU p50 ${ms(pct(w.cpu, 0.5))} p95 ${ms(pct(w.cpu, 0.95))})`;
    console.log(`${run.name}: before ${f(time.before)} | after ${f(time.after)}; ` +
      `pruned searches cut off ${pr.cutOff - pruning0.cutOff} of ${pr.searches - pruning0.searches}, postings read in full ${(100 * read).toFixed(0)} %; ` +
      `hits differing ${differ} of ${qs.length} queries (load average ${load0} → ${load()})`);
  }
  index.tuneLexical({ pruneMinPostings: PRUNE_MIN_POSTINGS, feedbackFromText: false });
  index.configure(defaults);

  // Fusion's cosines: every candidate's float vector read (as before) against int8 cosines
  // with error bounds and float vectors read only where they can decide the top k; query by
  // query in alternating order, the hits must be the same.
  for (const run of runs.filter((r) => r.workspaceId === 'bench' && r.mode !== 'bm25' && !r.tags)) {
    const name = `cosines all/bounded: ${run.name}`;
    if (options.only && !options.only.test(name)) continue;
    index.configure(run.prf ? defaults : noPrf);
    const time = new Map([true, false].map((b) => [b, { wall: [] as number[], cpu: [] as number[] }]));
    let differ = 0;
    const load0 = load();
    for (let i = 0; i < qs.length; i++) {
      const hits = new Map<boolean, string>();
      for (const bounded of i % 2 === 0 ? [false, true] : [true, false]) {
        index.tuneCosines({ bounded });
        const c = process.cpuUsage();
        const t = process.hrtime.bigint();
        const res = (await search(qs[i], run.workspaceId, run.mode)) as { documentId: string; chunkIndex: number; score: number }[];
        time.get(bounded)!.wall.push(Number(process.hrtime.bigint() - t) / 1e6);
        time.get(bounded)!.cpu.push(cpuMs(c));
        hits.set(bounded, JSON.stringify(res.map((h) => [h.documentId, h.chunkIndex, h.score])));
      }
      if (hits.get(true) !== hits.get(false)) differ++;
    }
    const f = (w: { wall: number[]; cpu: number[] }): string => `p50 ${ms(pct(w.wall, 0.5))} p95 ${ms(pct(w.wall, 0.95))} (CPU p50 ${ms(pct(w.cpu, 0.5))})`;
    console.log(`${name}: all ${f(time.get(false)!)} | bounded ${f(time.get(true)!)}; hits differing ${differ} of ${qs.length} queries (load average ${load0} → ${load()})`);
  }
  index.tuneCosines({ bounded: true });
  index.configure(defaults);

  if (global.gc) global.gc();
  const mem = process.memoryUsage();
  console.log(`memory: process RSS ${mb(mem.rss)} (${mb(mem.rss - rssBefore)} more than before opening the index; the embedder is loaded), ` +
    `heap used ${mb(mem.heapUsed)}, array buffers ${mb(mem.arrayBuffers)}; int8 vectors ${mb(index.stats().vectorBytes)}`);
  if (n === 1_000_000) figure('search', `RSS at ${label(n)}`, mem.rss / 1024 ** 3, 'GB', { kind: 'max', value: 1.5 });

  if (!options.only || options.only.test('recall')) {
    const path = index.stats().denseIndex ? 'approximate dense index' : 'exact int8 scan';
    const recall = await denseRecall(index, file, qs.slice(0, RECALL_QUERIES));
    console.log(`dense recall@10 vs exact float32 (${Math.min(RECALL_QUERIES, qs.length)} queries, ${path} + float re-score): ${recall.all.toFixed(4)}; ` +
      `with the tag filter (10% of docs): ${recall.tagged.toFixed(4)}`);
    if (index.stats().denseIndex) {
      figure('search', `dense recall@10 vs exact at ${label(n)} (approximate index)`, recall.all, '', { kind: 'min', value: 0.95 });
      // A scope under minScope is scanned exactly: no figure for the approximate index then.
      const tagged = (await index.countDocuments({ workspaceId: 'bench', tags: ['t-ten'] })) * PER_DOC;
      if (tagged >= index.annSettings.minScope) figure('search', `dense recall@10 vs exact at ${label(n)}, tag filter (approximate index)`, recall.tagged, '', { kind: 'min', value: 0.95 });
      else console.log(`  (the tag filter's ${tagged} chunks are under the approximate index's minScope ${index.annSettings.minScope}: scanned exactly)`);
    }
  }
  if (index.stats().denseIndex && (!options.only || options.only.test('approximate vs exact'))) await approximateVsExact(index, qs);
  if (index.stats().denseIndex && options.only?.test('crossover')) await crossover(index, qs, n);
  if (index.stats().denseIndex && options.only?.test('probe')) await probeDepth(index, qs);
  await index.close();
  await provider.close();
  if (n <= 100_000 || options.crashStartup) await caughtUpStartup(file, n);
  if (n <= 100_000 || options.textStartup) {
    // No valid snapshot (missing or corrupt): the lexical index is rebuilt from the text.
    fs.rmSync(`${file}.lexical`, { force: true });
    const c = process.cpuUsage();
    const t = process.hrtime.bigint();
    const reopened = new EmbeddedSearchIndex(file);
    console.log(`start-up without a lexical snapshot (missing or corrupt): ${(Number(process.hrtime.bigint() - t) / 1e9).toFixed(2)} s (CPU ${(cpuMs(c) / 1000).toFixed(2)} s), ` +
      `lexical index ${reopened.stats().lexicalFrom === 'text' ? 'rebuilt from the text' : 'from a snapshot?'}`);
    await reopened.close();
  }
  if (!options.keep) fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * Start-up as after kill -9 following writes: the lexical snapshot and the IVF file on disk
 * are older than the file's rows, here by 1,500 chunks deleted and 1,500 added since (written,
 * then the older files put back, which is the state a crash leaves): both are caught up. The
 * corpus is left with the rows it had (the chunks added are deleted again).
 */
async function caughtUpStartup(file: string, n: number): Promise<void> {
  const snapshot = `${file}.lexical`;
  const docs = (prefix: string): { documentId: string; chunks: IndexedChunk[] }[] =>
    Array.from({ length: 300 }, (_, d) => ({
      documentId: `${prefix}-${d}`,
      chunks: Array.from({ length: 5 }, (_, c) => ({
        workspaceId: 'bench', documentId: `${prefix}-${d}`, documentTitle: `crash ${d}`, purpose: 'KNOWLEDGE' as const, tags: [], chunkIndex: c,
        content: `written after the snapshot ${prefix} ${d} ${c} boundary layer`, vector: [],
      })),
    }));
  let index = new EmbeddedSearchIndex(file);
  await index.upsertDocuments(docs('crash-a'));
  await index.close();
  const older = fs.readFileSync(snapshot);
  const ivfFile = `${file}.ivf`;
  const olderIvf = fs.existsSync(ivfFile) ? fs.readFileSync(ivfFile) : undefined;
  index = new EmbeddedSearchIndex(file);
  for (const d of docs('crash-a')) await index.deleteDocument(d.documentId);
  await index.upsertDocuments(docs('crash-b'));
  await index.close();
  fs.writeFileSync(snapshot, older);
  if (olderIvf) fs.writeFileSync(ivfFile, olderIvf);
  const c = process.cpuUsage();
  const t = process.hrtime.bigint();
  index = new EmbeddedSearchIndex(file);
  const s = Number(process.hrtime.bigint() - t) / 1e9;
  console.log(`start-up after kill -9 following writes (snapshot older by 1,500 chunks deleted and 1,500 added): ${s.toFixed(2)} s (CPU ${(cpuMs(c) / 1000).toFixed(2)} s), ` +
    `lexical index ${index.stats().lexicalFrom === 'caught-up' ? 'caught up from the older snapshot' : index.stats().lexicalFrom}, approximate dense index ${index.stats().denseIndex?.from ?? 'none (training)'} (load average ${load()})`);
  if (n === 1_000_000) figure('search', `start-up after kill -9 at ${label(n)}`, s, 's', { kind: 'max', value: 30 });
  for (const d of docs('crash-b')) await index.deleteDocument(d.documentId);
  await index.close();
}

/**
 * Recall@10 of the dense search against an exact float32 scan of every stored vector of the
 * workspace (streamed from the file, so no second copy is held).
 */
async function denseRecall(index: EmbeddedSearchIndex, file: string, qs: { text: string; vector: Float32Array }[]): Promise<{ all: number; tagged: number }> {
  const k = 10;
  const dims = index.stats().dims;
  const top = () => qs.map(() => ({ score: new Float64Array(k).fill(-Infinity), key: new Array<string>(k).fill('') }));
  const bestAll = top();
  const bestTagged = top();
  const db = new Database(file, { readonly: true });
  try {
    const rows = db
      .prepare<[], { document_id: string; chunk_index: number; tags: string; vector: Buffer }>(
        "SELECT document_id, chunk_index, tags, vector FROM chunks WHERE workspace_id = 'bench' AND vector IS NOT NULL",
      )
      .iterate();
    const v = new Float32Array(dims);
    for (const r of rows) {
      for (let i = 0; i < dims; i++) v[i] = r.vector.readFloatLE(i * 4);
      const tagged = r.tags.includes('"t-ten"');
      qs.forEach((q, j) => {
        let s = 0;
        for (let i = 0; i < dims; i++) s += q.vector[i] * v[i];
        for (const b of tagged ? [bestAll[j], bestTagged[j]] : [bestAll[j]]) insert(b, s, `${r.document_id}#${r.chunk_index}`);
      });
    }
  } finally {
    db.close();
  }
  function insert(b: { score: Float64Array; key: string[] }, s: number, key: string): void {
        if (s <= b.score[k - 1]) return;
        let p = k - 1;
        while (p > 0 && b.score[p - 1] < s) {
          b.score[p] = b.score[p - 1];
          b.key[p] = b.key[p - 1];
          p--;
        }
        b.score[p] = s;
        b.key[p] = key;
  }
  const recall = async (best: { key: string[] }[], tags?: string[]): Promise<number> => {
    let found = 0;
    for (let j = 0; j < qs.length; j++) {
      const truth = new Set(best[j].key);
      const hits = await index.search({ text: '', vector: qs[j].vector, filters: { workspaceId: 'bench', ...(tags ? { tags } : {}) }, k, mode: 'dense' });
      found += hits.filter((h) => truth.has(`${h.documentId}#${h.chunkIndex}`)).length;
    }
    return found / (qs.length * k);
  };
  return { all: await recall(bestAll), tagged: await recall(bestTagged, ['t-ten']) };
}

type Query = { text: string; vector: Float32Array };

/** One search timed: wall and CPU ms, and its hits' keys. */
async function timed(index: EmbeddedSearchIndex, req: Parameters<EmbeddedSearchIndex['search']>[0]): Promise<{ wall: number; cpu: number; keys: string[] }> {
  const c = process.cpuUsage();
  const t = process.hrtime.bigint();
  const hits = await index.search(req);
  return { wall: Number(process.hrtime.bigint() - t) / 1e6, cpu: cpuMs(c), keys: hits.map((h) => `${h.documentId}#${h.chunkIndex}`) };
}

/**
 * The approximate dense leg against the exact scan, query by query in turn (the same load for
 * both): dense and default hybrid latency, and how many of the exact path's top 10 the
 * approximate one returns.
 */
async function approximateVsExact(index: EmbeddedSearchIndex, qs: Query[]): Promise<void> {
  const cases: { name: string; mode: 'dense' | 'hybrid'; tags?: string[] }[] = [
    { name: 'dense', mode: 'dense' },
    { name: 'hybrid+prf', mode: 'hybrid' },
    { name: 'hybrid+prf, tag filter', mode: 'hybrid', tags: ['t-ten'] },
  ];
  console.log(`approximate vs exact dense leg, interleaved query by query (load average ${load()}):`);
  for (const c of cases) {
    const approx = { wall: [] as number[], cpu: [] as number[] };
    const exact = { wall: [] as number[], cpu: [] as number[] };
    let overlap = 0;
    for (const q of qs) {
      const req = { text: q.text, vector: q.vector, filters: { workspaceId: 'bench', ...(c.tags ? { tags: c.tags } : {}) }, k: 10, mode: c.mode };
      index.configureAnn({ searchExact: true });
      const e = await timed(index, req);
      index.configureAnn({ searchExact: false });
      const a = await timed(index, req);
      approx.wall.push(a.wall);
      approx.cpu.push(a.cpu);
      exact.wall.push(e.wall);
      exact.cpu.push(e.cpu);
      const truth = new Set(e.keys);
      overlap += a.keys.filter((key) => truth.has(key)).length / Math.max(1, e.keys.length);
    }
    const scope = c.tags ? (await index.countDocuments({ workspaceId: 'bench', tags: c.tags })) * PER_DOC : index.stats().chunks;
    const exactToo = scope < index.annSettings.minScope ? ' (scope under minScope: both exact)' : '';
    console.log(`  ${(c.name + exactToo).padEnd(24)} approximate p50 ${ms(pct(approx.wall, 0.5))} (CPU ${ms(pct(approx.cpu, 0.5))}), p95 ${ms(pct(approx.wall, 0.95))}; ` +
      `exact p50 ${ms(pct(exact.wall, 0.5))} (CPU ${ms(pct(exact.cpu, 0.5))}), p95 ${ms(pct(exact.wall, 0.95))}; ` +
      `top-10 overlap with exact ${(overlap / qs.length).toFixed(4)} (load average ${load()})`);
  }
}

/**
 * Where the approximate index starts to pay: dense searches over scopes of random documents
 * of the large workspace, exact and approximate in turn (minScope lowered to 0 for the run),
 * CPU ms p50 and the approximate path's recall@10 against the exact one.
 */
async function crossover(index: EmbeddedSearchIndex, qs: Query[], n: number): Promise<void> {
  const saved = index.annSettings;
  index.configureAnn({ minScope: 0 });
  const rand = rng(5);
  const docs = n / PER_DOC;
  console.log(`crossover: dense search over a scope of random documents of the large workspace (load average ${load()}):`);
  for (const chunks of [2_000, 5_000, 10_000, 20_000, 50_000, 100_000].filter((c) => c < n)) {
    const documentIds = new Set<string>();
    while (documentIds.size < chunks / PER_DOC) documentIds.add(`doc-${Math.floor(rand() * docs)}`);
    const filters = { workspaceId: 'bench', documentIds: [...documentIds] };
    const a: number[] = [];
    const e: number[] = [];
    let found = 0;
    for (const q of qs.slice(0, 60)) {
      index.configureAnn({ searchExact: true });
      const ex = await timed(index, { text: '', vector: q.vector, filters, k: 10, mode: 'dense' });
      index.configureAnn({ searchExact: false });
      const ap = await timed(index, { text: '', vector: q.vector, filters, k: 10, mode: 'dense' });
      e.push(ex.cpu);
      a.push(ap.cpu);
      const truth = new Set(ex.keys);
      found += ap.keys.filter((key) => truth.has(key)).length / Math.max(1, ex.keys.length);
    }
    console.log(`  scope ${String(chunks).padStart(7)} chunks: exact CPU p50 ${ms(pct(e, 0.5))}, approximate CPU p50 ${ms(pct(a, 0.5))}, recall@10 vs exact ${(found / 60).toFixed(4)}`);
  }
  index.configureAnn(saved);
}

/**
 * What the probe depth (`probeLists`, KB_DENSE_INDEX_PROBE_LISTS) buys: dense searches over the
 * large workspace, and with the tag filter when its scope is over minScope, at several depths,
 * each query's exact scan and approximate search in turn (the same load for both): CPU ms p50 of
 * each, and the approximate path's recall@10 against the exact one.
 */
async function probeDepth(index: EmbeddedSearchIndex, qs: Query[]): Promise<void> {
  const saved = index.annSettings;
  const lists = index.stats().denseIndex?.lists ?? 0;
  const tagged = (await index.countDocuments({ workspaceId: 'bench', tags: ['t-ten'] })) * PER_DOC;
  const scopes: { name: string; tags?: string[] }[] = [{ name: 'whole workspace' }, ...(tagged >= saved.minScope ? [{ name: 'tag filter', tags: ['t-ten'] }] : [])];
  console.log(`probe depth: dense search, approximate against exact query by query, ${lists} lists, minProbe ${saved.minProbe} (load average ${load()}):`);
  for (const scope of scopes) {
    for (const probeLists of [8, 16, 32, 64, 128, 256]) {
      index.configureAnn({ probeLists });
      const a: number[] = [];
      const e: number[] = [];
      let found = 0;
      for (const q of qs) {
        const req = { text: '', vector: q.vector, filters: { workspaceId: 'bench', ...(scope.tags ? { tags: scope.tags } : {}) }, k: 10, mode: 'dense' as const };
        index.configureAnn({ searchExact: true });
        const ex = await timed(index, req);
        index.configureAnn({ searchExact: false });
        const ap = await timed(index, req);
        e.push(ex.cpu);
        a.push(ap.cpu);
        const truth = new Set(ex.keys);
        found += ap.keys.filter((key) => truth.has(key)).length / Math.max(1, ex.keys.length);
      }
      const recall = found / qs.length;
      console.log(`  ${scope.name.padEnd(16)} probeLists ${String(probeLists).padStart(3)}${probeLists === DEFAULT_ANN.probeLists ? ' (default)' : '          '}: ` +
        `approximate CPU p50 ${ms(pct(a, 0.5))}, exact CPU p50 ${ms(pct(e, 0.5))}, recall@10 vs exact ${recall.toFixed(4)} (load average ${load()})`);
    }
  }
  index.configureAnn(saved);
}

export async function benchSearch(options: BenchOptions = {}): Promise<void> {
  const sizes = options.sizes ?? [10_000, 100_000];
  console.log(`search benchmark: Cranfield-drawn text, GloVe-SIF 100-d vectors (the default embedder), one large workspace and ${SMALL_WORKSPACES} small ones; ` +
    `node ${process.version}, load average ${load()}`);
  for (const n of sizes) await benchSize(n, options);
  console.log(`(load average at the end: ${load()})`);
}

/** `--sizes a,b` of a command line, if given. */
export function sizesArg(args: string[]): number[] | undefined {
  const i = args.indexOf('--sizes');
  return i >= 0 ? args[i + 1].split(',').map(Number) : undefined;
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const arg = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const run = arg('--build')
    ? build(arg('--build')!, Number(arg('--size')))
    : benchSearch({
        sizes: sizesArg(args),
        queries: arg('--queries') ? Number(arg('--queries')) : undefined,
        keep: arg('--keep'),
        only: arg('--only') ? new RegExp(arg('--only')!) : undefined,
        crashStartup: args.includes('--crash-startup'),
        textStartup: args.includes('--text-startup'),
      });
  run.catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
