/**
 * `npm run bench`: every benchmark, figures printed. Pass names to run some only:
 * `npm run bench -- core search`. Available: core, search, extract, ingest, analytics (`--events N`), metrics, reembed.
 */
import { benchCore } from './core';
import { benchSearch } from './search';
import { benchExtract } from './ingest-extract';
import { benchIngest } from './ingest';
import { benchAnalytics } from './analytics';
import { benchMetrics } from './metrics';
import { benchReembed } from './reembed';
import os from 'node:os';
import { printTargetTable } from './targets';

const benches: Record<string, () => Promise<void>> = {
  core: benchCore,
  search: () => benchSearch(),
  extract: () => benchExtract(),
  ingest: benchIngest,
  analytics: benchAnalytics,
  metrics: benchMetrics,
  reembed: benchReembed,
};

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const wanted = args.filter((a, i) => !a.startsWith('-') && args[i - 1] !== '--events');
  const unknown = wanted.filter((w) => !(w in benches));
  if (unknown.length) throw new Error(`unknown bench(es) ${unknown.join(', ')}; available: ${Object.keys(benches).join(', ')}`);
  const names = wanted.length ? wanted : Object.keys(benches);
  console.log(`node ${process.version}, ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  for (const name of names) {
    console.log(`\n== ${name} ==`);
    const t = Date.now();
    await benches[name]();
    console.log(`(${name}: ${((Date.now() - t) / 1000).toFixed(1)} s)`);
  }
  printTargetTable();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
