/**
 * Fusion and feedback settings measured on several collections at once, so that a default is
 * chosen by what holds on all of them rather than on one.
 *
 *   npm run build && node dist/bench/tune.js --data ../shared/eval/cranfield,eval/cisi [--embedder glove] [--sif-a 1e-4]
 *     [--grid fusion|prf|dense|all] [--configs '[{"denseWeight":0.3}, ...]'] [--mode hybrid|bm25|dense] [--k 300]
 *
 * Each row is one configuration (overrides of DEFAULT_HYBRID_CONFIG): nDCG@10 and Recall@100
 * per collection, their mean, and the paired difference in nDCG@10 from the first row (the
 * current default) with its standard error over the queries (mean ± 1 SE), per collection,
 * and the wall time per judged query (search only; list a setting twice, interleaved with
 * another, to compare costs on a busy machine).
 * Embeddings come from bench/eval.ts's cache (.tmp/eval-cache).
 */
import path from 'node:path';
import { DEFAULT_LOCAL_EMBEDDER, LOCAL_EMBEDDERS, modelCacheDirs, type LocalEmbedderName } from '../src/adapters/embeddings/factory';
import { GloveSifEmbeddings } from '../src/adapters/embeddings/gloveSifEmbeddings';
import { resolveHybridConfig, type HybridOverrides } from '../src/search/hybrid';
import { repoRoot } from '../src/util/paths';
import { buildCollection, evaluate, type Collection, type Mode } from './eval';

/** Named grids around the default; every grid starts with the default itself ({}). */
export function grid(name: string): HybridOverrides[] {
  const out: HybridOverrides[] = [{}];
  if (name === 'fusion' || name === 'all') {
    for (const denseWeight of [0.2, 0.3, 0.4, 0.5, 0.6]) {
      for (const lexicalScale of [0.15, 0.25, 0.4]) out.push({ denseWeight, lexicalScale });
    }
  }
  if (name === 'dense' || name === 'all') {
    for (const low of [0, 0.1, 0.2, 0.3]) {
      for (const high of [0.6, 0.7, 0.8, 0.9]) out.push({ dense: { low, high } });
    }
  }
  if (name === 'prf' || name === 'all') {
    for (const docs of [3, 5, 8, 10]) {
      for (const terms of [10, 20, 30]) {
        for (const originalWeight of [0.5, 0.6, 0.7]) out.push({ prf: { docs, terms, originalWeight } });
      }
    }
    for (const maxDocFrequency of [0.05, 0.2]) out.push({ prf: { maxDocFrequency } });
    for (const denseWeight of [0.25, 0.5]) out.push({ prf: { denseWeight } });
  }
  return out;
}

function paired(a: number[], b: number[]): { mean: number; se: number } {
  const d = a.map((x, i) => x - b[i]);
  const mean = d.reduce((s, x) => s + x, 0) / Math.max(1, d.length);
  const variance = d.reduce((s, x) => s + (x - mean) ** 2, 0) / Math.max(1, d.length - 1);
  return { mean, se: Math.sqrt(variance / Math.max(1, d.length)) };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const arg = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const dirs = (arg('--data') ?? '../shared/eval/cranfield,eval/cisi').split(',').map((d) => path.resolve(process.cwd(), d));
  const embedder = (arg('--embedder') ?? DEFAULT_LOCAL_EMBEDDER) as LocalEmbedderName;
  if (!LOCAL_EMBEDDERS.includes(embedder)) throw new Error(`--embedder: one of ${LOCAL_EMBEDDERS.join(', ')}`);
  const sifA = arg('--sif-a');
  if (sifA && embedder !== 'glove') throw new Error('--sif-a applies to --embedder glove');
  const mode = (arg('--mode') ?? 'hybrid') as Mode;
  const k = arg('--k') ? Number(arg('--k')) : undefined;
  const configs: HybridOverrides[] = arg('--configs') ? (JSON.parse(arg('--configs')!) as HybridOverrides[]) : grid(arg('--grid') ?? 'fusion');
  if (configs.length === 0 || JSON.stringify(configs[0]) !== '{}') configs.unshift({});
  const cacheDir = path.join(repoRoot, '.tmp', 'eval-cache');
  const collections: { name: string; c: Collection }[] = [];
  for (const dir of dirs) {
    const provider = sifA ? new GloveSifEmbeddings({ cacheDirs: modelCacheDirs(undefined, process.env.KB_MODEL_CACHE_DIR), a: Number(sifA) }) : undefined;
    collections.push({ name: path.basename(dir), c: await buildCollection(dir, { cacheDir, embedder, provider }) });
  }
  console.log(`embedder ${embedder}${sifA ? ` (SIF a=${sifA})` : ''}, mode ${mode}; nDCG@10 / Recall@100 per collection; Δ nDCG@10 vs the first row (± 1 SE, paired over queries)`);
  console.log(`${'config'.padEnd(70)} ${collections.map((x) => x.name.padEnd(16)).join(' ')} mean     ${collections.map((x) => `Δ ${x.name}`.padEnd(18)).join(' ')}`);
  let baseline: number[][] | undefined;
  for (const overrides of configs) {
    const per: { ndcg: number; r100: number; q: number[]; ms: number }[] = [];
    for (const { c } of collections) {
      c.index.configure(resolveHybridConfig(overrides));
      const started = process.hrtime.bigint();
      const m = await evaluate(c, mode, k);
      const ms = Number(process.hrtime.bigint() - started) / 1e6 / Math.max(1, m.perQueryNdcg10.length);
      per.push({ ndcg: m.ndcg10, r100: m.recall100, q: m.perQueryNdcg10, ms });
    }
    baseline ??= per.map((p) => p.q);
    const mean = per.reduce((s, p) => s + p.ndcg, 0) / per.length;
    const deltas = per.map((p, i) => paired(p.q, baseline![i]));
    console.log(
      `${JSON.stringify(overrides).padEnd(70)} ${per.map((p) => `${p.ndcg.toFixed(4)} / ${p.r100.toFixed(3)}`.padEnd(16)).join(' ')} ${mean.toFixed(4)}   ${deltas
        .map((d) => `${d.mean >= 0 ? '+' : ''}${d.mean.toFixed(4)} ± ${d.se.toFixed(4)}`.padEnd(18))
        .join(' ')}  ${per.map((p) => `${p.ms.toFixed(1)} ms/q`).join(' ')}`,
    );
  }
  for (const { c } of collections) await c.index.close();
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
