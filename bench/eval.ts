/**
 * Retrieval quality on a test collection (Cranfield layout: documents.json, queries.json,
 * qrels.json). Documents go through the upload path minus extraction: chunker → local
 * embeddings → embedded index; queries are embedded with the same provider.
 *
 *   npm run eval -- --data ../shared/eval/cranfield|eval/cisi [--embedder glove|use|use+glove (default: the service's default, glove)] [--threads 2] [--sweep] [--prf-sweep] [--no-cache]
 *     [--hybrid '{"prf":{"poolDepth":2}}'] [--only 'hybrid|hybrid\+prf'] [--k 30] [--ann '{"buildAt":0,"minScope":0}']
 *
 * Prints nDCG@10, Recall@10, Recall@100 and MRR@10 for BM25, dense and hybrid ranking,
 * each without and with pseudo-relevance feedback (+prf), chunk hits aggregated to
 * documents by their best chunk. Embeddings are cached under
 * .tmp/ (keyed by model and text) so reruns take seconds.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { EmbeddedSearchIndex } from '../src/adapters/embedded/embeddedSearchIndex';
import type { AnnSettings } from '../src/adapters/embedded/ivfIndex';
import { ConcatEmbeddings } from '../src/adapters/embeddings/concatEmbeddings';
import { createLocalEmbedder, DEFAULT_LOCAL_EMBEDDER, LOCAL_EMBEDDERS, modelCacheDirs, type LocalEmbedderName } from '../src/adapters/embeddings/factory';
import type { EmbeddingProvider } from '../src/ports/embeddings';
import type { IndexedChunk } from '../src/ports/searchIndex';
import { chunkText, DEFAULT_CHUNK_OPTIONS } from '../src/processing/chunker';
import { DEFAULT_HYBRID_CONFIG, type HybridOverrides, type PrfConfig } from '../src/search/hybrid';
import { repoRoot } from '../src/util/paths';

interface EvalDoc { id: number | string; title: string; body: string }
interface EvalQuery { id: number | string; text: string }
interface Qrel { queryId: number | string; docId: number | string; relevance: number }

export interface Metrics { ndcg10: number; recall10: number; recall100: number; mrr10: number }
export type Mode = 'bm25' | 'dense' | 'hybrid';

const WORKSPACE = 'eval';

/** Embeds with a file cache keyed by model id and text hash. */
async function embedCached(provider: EmbeddingProvider, texts: string[], cacheDir: string | undefined): Promise<Float32Array[]> {
  const hash = (t: string): string => crypto.createHash('sha1').update(t).digest('hex');
  const file = cacheDir ? path.join(cacheDir, `embeddings-${provider.modelId.replace(/[^a-z0-9]+/gi, '_')}.json`) : undefined;
  const cache: Record<string, number[]> = file && fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, number[]>) : {};
  const missing = [...new Set(texts.filter((t) => !cache[hash(t)]))];
  if (missing.length > 0) {
    // Load the model first: the rate is of embedding, not of loading.
    await (provider as { warmup?: () => Promise<void> }).warmup?.();
    const started = Date.now();
    const cpu = process.cpuUsage();
    const vectors = await provider.embed(missing);
    const used = process.cpuUsage(cpu);
    const cpuSeconds = (used.user + used.system) / 1e6;
    missing.forEach((t, i) => (cache[hash(t)] = Array.from(vectors[i])));
    console.error(`${provider.modelId}: embedded ${missing.length} texts in ${((Date.now() - started) / 1000).toFixed(1)} s, ${cpuSeconds.toFixed(1)} CPU-s = ${(missing.length / cpuSeconds).toFixed(0)} texts per CPU-second`);
    if (file) {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, JSON.stringify(cache));
    }
  }
  return texts.map((t) => Float32Array.from(cache[hash(t)]));
}

export interface Collection {
  index: EmbeddedSearchIndex;
  queries: { id: string; text: string; vector: Float32Array }[];
  qrels: Map<string, Map<string, number>>;
  chunks: number;
}

/** Loads, chunks, embeds and indexes a collection. */
export async function buildCollection(dataDir: string, opts: { threads?: number; cacheDir?: string; embedder?: LocalEmbedderName; provider?: EmbeddingProvider; ann?: Partial<AnnSettings> } = {}): Promise<Collection> {
  const read = <T>(f: string): T => JSON.parse(fs.readFileSync(path.join(dataDir, f), 'utf8')) as T;
  const docs = read<EvalDoc[]>('documents.json');
  const rawQueries = read<EvalQuery[]>('queries.json');
  const rawQrels = read<Qrel[]>('qrels.json');
  const provider =
    opts.provider ??
    createLocalEmbedder(opts.embedder ?? DEFAULT_LOCAL_EMBEDDER, { threads: opts.threads ?? 2, cacheDirs: modelCacheDirs(undefined, process.env.KB_MODEL_CACHE_DIR), log: (m) => console.error(m) });
  try {
    const perDoc = docs.map((d) => ({ d, chunks: chunkText([{ text: d.body }], DEFAULT_CHUNK_OPTIONS) }));
    const allTexts = perDoc.flatMap((p) => p.chunks.map((c) => c.content));
    // A concatenation is built from its parts' (cached) vectors.
    const embedAll = async (texts: string[]): Promise<Float32Array[]> =>
      provider instanceof ConcatEmbeddings
        ? provider.combine(await Promise.all(provider.parts.map((p) => embedCached(p.provider, texts, opts.cacheDir))))
        : embedCached(provider, texts, opts.cacheDir);
    const vectors = await embedAll(allTexts);
    const queryVectors = await embedAll(rawQueries.map((q) => q.text));
    const index = new EmbeddedSearchIndex(':memory:', opts.ann ? { ann: opts.ann } : {});
    let v = 0;
    for (const { d, chunks } of perDoc) {
      const id = String(d.id);
      const indexed: IndexedChunk[] = chunks.map((c) => ({
        workspaceId: WORKSPACE, documentId: id, documentTitle: d.title, purpose: 'KNOWLEDGE', tags: [],
        chunkIndex: c.index, content: c.content, vector: vectors[v++], page: c.page, section: c.section,
      }));
      await index.upsertDocument(id, indexed);
    }
    const qrels = new Map<string, Map<string, number>>();
    for (const r of rawQrels) {
      const q = String(r.queryId);
      if (!qrels.has(q)) qrels.set(q, new Map());
      qrels.get(q)!.set(String(r.docId), r.relevance);
    }
    const queries = rawQueries.map((q, i) => ({ id: String(q.id), text: q.text, vector: queryVectors[i] }));
    return { index, queries, qrels, chunks: v };
  } finally {
    await provider.close();
  }
}

/** Ranked document ids for a query: chunk hits aggregated by best chunk (first occurrence). */
async function rankDocuments(c: Collection, q: Collection['queries'][number], mode: Mode, depth: number, k = depth * 3): Promise<{ docs: string[]; scores: number[] }> {
  const hits = await c.index.search({ text: q.text, vector: q.vector, filters: { workspaceId: WORKSPACE }, k, mode });
  const docs: string[] = [];
  const scores: number[] = [];
  const seen = new Set<string>();
  for (const h of hits) {
    if (seen.has(h.documentId)) continue;
    seen.add(h.documentId);
    docs.push(h.documentId);
    scores.push(h.score);
    if (docs.length === depth) break;
  }
  return { docs, scores };
}

function metricsFor(ranked: string[], judged: Map<string, number>): Metrics {
  const relevant = [...judged.entries()].filter(([, g]) => g > 0);
  const gains = relevant.map(([, g]) => g).sort((a, b) => b - a);
  let dcg = 0;
  let idcg = 0;
  for (let i = 0; i < 10; i++) {
    dcg += (judged.get(ranked[i]) ?? 0) / Math.log2(i + 2);
    if (i < gains.length) idcg += gains[i] / Math.log2(i + 2);
  }
  const relSet = new Set(relevant.map(([d]) => d));
  const found = (k: number): number => ranked.slice(0, k).filter((d) => relSet.has(d)).length;
  const first = ranked.slice(0, 10).findIndex((d) => relSet.has(d));
  return {
    ndcg10: idcg > 0 ? dcg / idcg : 0,
    recall10: relSet.size ? found(10) / relSet.size : 0,
    recall100: relSet.size ? found(100) / relSet.size : 0,
    mrr10: first >= 0 ? 1 / (first + 1) : 0,
  };
}

/**
 * Mean metrics over the judged queries, plus score samples by relevance grade (for
 * calibration) and each judged query's nDCG@10 (in query order, for paired comparisons).
 *
 * `k`: chunks requested per query (default 300, enough for Recall@100); a small k (e.g. 30)
 * measures the top of the ranking the way the API is used (Recall@100 is then meaningless).
 */
export async function evaluate(c: Collection, mode: Mode, k?: number): Promise<Metrics & { scoreByGrade: Map<number, number[]>; perQueryNdcg10: number[] }> {
  const sum: Metrics = { ndcg10: 0, recall10: 0, recall100: 0, mrr10: 0 };
  const scoreByGrade = new Map<number, number[]>();
  const perQueryNdcg10: number[] = [];
  let n = 0;
  for (const q of c.queries) {
    const judged = c.qrels.get(q.id);
    if (!judged || ![...judged.values()].some((g) => g > 0)) continue;
    const { docs, scores } = await rankDocuments(c, q, mode, 100, k);
    const m = metricsFor(docs, judged);
    perQueryNdcg10.push(m.ndcg10);
    for (const key of Object.keys(sum) as (keyof Metrics)[]) sum[key] += m[key];
    docs.slice(0, 10).forEach((d, i) => {
      const g = judged.get(d) ?? 0;
      if (!scoreByGrade.has(g)) scoreByGrade.set(g, []);
      scoreByGrade.get(g)!.push(scores[i]);
    });
    n++;
  }
  for (const key of Object.keys(sum) as (keyof Metrics)[]) sum[key] /= Math.max(1, n);
  return { ...sum, scoreByGrade, perQueryNdcg10 };
}

const fmt = (x: number): string => x.toFixed(4);

function quantiles(xs: number[]): string {
  if (xs.length === 0) return '-';
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number): string => s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(2);
  return `p10 ${q(0.1)} p50 ${q(0.5)} p90 ${q(0.9)} (n=${s.length})`;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const arg = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const data = path.resolve(process.cwd(), arg('--data') ?? '../shared/eval/cranfield');
  const cacheDir = args.includes('--no-cache') ? undefined : path.join(repoRoot, '.tmp', 'eval-cache');
  const started = Date.now();
  // Default: the service's own default local embedder (KB_EMBEDDINGS=local).
  const embedder = (arg('--embedder') ?? DEFAULT_LOCAL_EMBEDDER) as LocalEmbedderName;
  if (!LOCAL_EMBEDDERS.includes(embedder)) throw new Error(`--embedder: one of ${LOCAL_EMBEDDERS.join(', ')}`);
  // --ann '{"buildAt":0,"minScope":0}': the approximate dense index on at this collection's size (ivfIndex.ts).
  const ann = arg('--ann') ? (JSON.parse(arg('--ann')!) as Partial<AnnSettings>) : undefined;
  const c = await buildCollection(data, { threads: Number(arg('--threads') ?? 2), cacheDir, embedder, ann });
  if (ann) console.log(`approximate dense index: ${JSON.stringify(c.index.annSettings)}, ${JSON.stringify(c.index.stats().denseIndex)}`);
  console.log(`collection ${data}: ${c.queries.length} queries, ${c.chunks} chunks, embedder ${embedder} (built in ${((Date.now() - started) / 1000).toFixed(1)} s)`);
  // --hybrid '{"prf":{"poolDepth":2}}' evaluates another configuration than the default.
  if (arg('--hybrid')) c.index.configure(JSON.parse(arg('--hybrid')!) as HybridOverrides);
  const cfg = c.index.hybridConfig;
  console.log(`hybrid config: ${JSON.stringify(cfg)}`);
  // "+prf" rows use the configured feedback, or a reference setting when the default has it off.
  const prfOn: PrfConfig = cfg.prf.docs > 0 ? cfg.prf : { ...cfg.prf, docs: 10, terms: 10, denseWeight: 1 };
  const prfOff: PrfConfig = { ...cfg.prf, docs: 0 };
  console.log('\nmode         nDCG@10  Recall@10  Recall@100  MRR@10');
  const rows: { name: string; mode: Mode; prf: PrfConfig }[] = [
    { name: 'bm25', mode: 'bm25', prf: prfOff },
    { name: 'bm25+prf', mode: 'bm25', prf: prfOn },
    { name: 'dense', mode: 'dense', prf: prfOff },
    { name: 'dense+prf', mode: 'dense', prf: prfOn },
    { name: 'hybrid', mode: 'hybrid', prf: prfOff },
    { name: 'hybrid+prf', mode: 'hybrid', prf: prfOn },
    // Dense feedback (Rocchio) for reference, when the default has none.
    ...(prfOn.denseWeight > 0
      ? []
      : [
          { name: 'dense+rocchio', mode: 'dense' as const, prf: { ...prfOn, denseWeight: 0.5 } },
          { name: 'hybrid+both', mode: 'hybrid' as const, prf: { ...prfOn, denseWeight: 0.5 } },
        ]),
  ];
  let calibration: Map<number, number[]> | undefined;
  const only = arg('--only') ? new RegExp(`^(${arg('--only')!})$`) : undefined;
  for (const row of rows) {
    if (only && !only.test(row.name)) continue;
    c.index.configure({ ...cfg, prf: row.prf });
    const started = process.hrtime.bigint();
    const m = await evaluate(c, row.mode, arg('--k') ? Number(arg('--k')) : undefined);
    const perQuery = Number(process.hrtime.bigint() - started) / 1e6 / c.queries.length;
    console.log(`${row.name.padEnd(12)} ${fmt(m.ndcg10)}   ${fmt(m.recall10)}     ${fmt(m.recall100)}     ${fmt(m.mrr10)}   (${perQuery.toFixed(1)} ms/query)`);
    if (row.mode === 'hybrid' && JSON.stringify(row.prf) === JSON.stringify(cfg.prf)) calibration = m.scoreByGrade;
  }
  console.log(`(+prf rows: ${JSON.stringify(prfOn)}; rocchio/both: dense feedback weight 0.5)`);
  if (calibration) {
    console.log('\ndefault hybrid: score of top-10 documents by relevance grade (0 = not relevant):');
    for (const g of [...calibration.keys()].sort()) console.log(`  grade ${g}: ${quantiles(calibration.get(g)!)}`);
  }
  c.index.configure(cfg);
  if (args.includes('--sweep')) {
    console.log('\nsweep (hybrid nDCG@10 / Recall@100):');
    const grid: HybridOverrides[] = [{ method: 'rrf', rrfK: 60 }, { method: 'rrf', rrfK: 20 }];
    for (const denseWeight of [0.1, 0.2, 0.3, 0.4, 0.5]) {
      for (const lexicalScale of [0.15, 0.25, 0.4]) {
        for (const low of [0, 0.1, 0.2]) grid.push({ method: 'weighted', denseWeight, lexicalScale, dense: { low, high: DEFAULT_HYBRID_CONFIG.dense.high } });
      }
    }
    for (const g of grid) {
      c.index.configure({ ...cfg, ...g });
      const m = await evaluate(c, 'hybrid');
      console.log(`  ${JSON.stringify(g)}: ${fmt(m.ndcg10)} / ${fmt(m.recall100)}`);
    }
    c.index.configure(cfg);
  }
  if (args.includes('--prf-sweep')) {
    console.log('\nfeedback sweep (nDCG@10 / Recall@100 per mode):');
    const grid: Partial<PrfConfig>[] = [];
    for (const docs of [3, 5, 10]) {
      for (const terms of [10, 20]) {
        for (const originalWeight of [0.5, 0.7]) {
          for (const denseWeight of [0, 0.5]) grid.push({ docs, terms, originalWeight, denseWeight });
        }
      }
    }
    for (const maxDocFrequency of [0.05, 0.2, 1]) grid.push({ docs: 5, terms: 10, originalWeight: 0.7, denseWeight: 0, maxDocFrequency });
    for (const g of grid) {
      c.index.configure({ ...cfg, prf: { ...cfg.prf, ...g } });
      const out: string[] = [];
      for (const mode of ['bm25', 'hybrid'] as const) {
        if (mode === 'bm25' && g.denseWeight) continue;
        const m = await evaluate(c, mode);
        out.push(`${mode} ${fmt(m.ndcg10)} / ${fmt(m.recall100)}`);
      }
      console.log(`  ${JSON.stringify(g)}: ${out.join('  ')}`);
    }
    c.index.configure(cfg);
  }
  await c.index.close();
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
