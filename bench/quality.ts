/**
 * `npm run bench -- quality`: retrieval quality of the default configuration (default local
 * embedder, DEFAULT_HYBRID_CONFIG) on the two test collections, Cranfield
 * (`../shared/eval/cranfield`, beside the repository; skipped with a message when absent) and
 * CISI (`eval/cisi`). Issue 13's target: Cranfield default hybrid nDCG@10 not below 0.404.
 * Full tables of every mode: `npm run eval -- --data DIR [--embedder NAME]`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_LOCAL_EMBEDDER, modelCacheDirs, createLocalEmbedder } from '../src/adapters/embeddings/factory';
import { repoRoot } from '../src/util/paths';
import { buildCollection, evaluate } from './eval';
import { figure } from './targets';

export const CRANFIELD_NDCG_TARGET = 0.404;

export async function benchQuality(): Promise<void> {
  const collections = [
    { name: 'Cranfield', dir: path.resolve(repoRoot, '..', 'shared', 'eval', 'cranfield'), target: CRANFIELD_NDCG_TARGET },
    { name: 'CISI', dir: path.join(repoRoot, 'eval', 'cisi'), target: undefined },
  ];
  for (const { name, dir, target } of collections) {
    if (!fs.existsSync(path.join(dir, 'documents.json'))) {
      console.log(`  ${name}: no collection at ${dir}, skipped`);
      continue;
    }
    // Embedded afresh (no cache): the default embedder takes about a second per collection.
    const provider = createLocalEmbedder(DEFAULT_LOCAL_EMBEDDER, { cacheDirs: modelCacheDirs(undefined, process.env.KB_MODEL_CACHE_DIR) });
    const c = await buildCollection(dir, { provider });
    try {
      const m = await evaluate(c, 'hybrid');
      const line = `nDCG@10 ${m.ndcg10.toFixed(4)}, Recall@10 ${m.recall10.toFixed(4)}, Recall@100 ${m.recall100.toFixed(4)}, MRR@10 ${m.mrr10.toFixed(4)}`;
      console.log(`  ${name} (${c.queries.length} queries, ${c.chunks} chunks), default hybrid with ${DEFAULT_LOCAL_EMBEDDER}: ${line}`);
      if (target !== undefined) figure('quality', `${name} default hybrid nDCG@10`, Number(m.ndcg10.toFixed(4)), '', { kind: 'min', value: target });
    } finally {
      await c.index.close();
    }
  }
}
