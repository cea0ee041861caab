/**
 * `npm run bench`: every benchmark, figures printed. Pass names to run some only:
 * `npm run bench -- core search`. Available: core (`--parts appends,http,rebuild`, `--http-seconds N`, `--http-clients 1,16`, `--rebuild-only`, `--rebuild-events N`), search (`--sizes 1000000 --keep DIR`), extract, ingest,
 * analytics (`--events N`), metrics, quality, reembed, floor (what HTTP, a JWT check, an fsynced append and express cost before the service's own work), mixed (`--seconds N`, `--chunks N`, `--keep DIR`, `--search-interval MS`), seal (sealing and opening document text and vectors).
 * `--keep DIR` means a different directory to search and to mixed: run them one at a time when using it.
 */
import { benchCore, coreOptions } from './core';
import { benchHttpFloor } from './httpFloor';
import { benchSearch, sizesArg } from './search';
import { benchExtract } from './ingest-extract';
import { benchIngest } from './ingest';
import { benchAnalytics } from './analytics';
import { benchMetrics } from './metrics';
import { benchMixed, mixedOptions } from './mixed';
import { benchQuality } from './quality';
import { benchReembed } from './reembed';
import { benchSeal } from './seal';
import os from 'node:os';
import { printTargetTable } from './targets';

const benches: Record<string, () => Promise<void>> = {
  core: () => benchCore(coreOptions(process.argv.slice(2))),
  search: () => {
    const args = process.argv.slice(2);
    const keep = args.indexOf('--keep');
    return benchSearch({ sizes: sizesArg(args), keep: keep >= 0 ? args[keep + 1] : undefined });
  },
  extract: () => benchExtract(),
  ingest: benchIngest,
  analytics: benchAnalytics,
  metrics: benchMetrics,
  mixed: () => benchMixed(mixedOptions(process.argv.slice(2))),
  quality: benchQuality,
  reembed: benchReembed,
  floor: () => benchHttpFloor(),
  seal: benchSeal,
};

/** Options that take a value (the value is not a bench name). */
const VALUED = new Set(['--parts', '--http-seconds', '--http-clients', '--rebuild-events', '--events', '--sizes', '--seconds', '--chunks', '--keep', '--search-interval']);

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const wanted = args.filter((a, i) => !a.startsWith('-') && !VALUED.has(args[i - 1]));
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
