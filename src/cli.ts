import path from 'node:path';
import type { ReembeddingProgress } from './search/vectorModels';

/*
 * The modules behind the commands are loaded by the command that needs them: `reembed --watch`
 * (a fetch loop) and `sql` start without the container's module tree (every adapter and its
 * client: ~1.3 s of CPU, seconds of wall time on a loaded machine, in which a short model
 * change could end before the watcher's first look).
 */

/** A one-line progress bar on a terminal; silent when not a TTY. */
export function progress(label: string, done: number, total: number, suffix = ''): void {
  if (!process.stderr.isTTY) return;
  const width = 30;
  const frac = total > 0 ? Math.min(1, done / total) : 1;
  const bar = '#'.repeat(Math.round(frac * width)).padEnd(width, '.');
  process.stderr.write(`\r${label} [${bar}] ${done}/${total}${suffix}`);
  if (done >= total) process.stderr.write('\n');
}

const USAGE = `Usage: npm run kb -- <command>
  rebuild [projection...]   rebuild read models (and the search index) from the event log (server stopped)
  projections               list projections and their checkpoints
  verify                    check the event log's hash chain; exit code 1 at the first break
  export [--from position|time] [--workspace id] [--out file]
                            write the log as NDJSON (stdout by default)
  export --format parquet [--workspace id] [--out dir]
                            write the log as Parquet (events.parquet + types/<EventType>.parquet; dir: ./kb-export)
  sql "<query>" [--csv] [--dir dir]
                            SQL (DuckDB) over a Parquet export: views events and one per event type
  project <file> [--workspace id] [--as-of time] [--format json|csv] [--out file]
                            run an ad-hoc projection (initialState, evolve, result) over the log in a sandbox
  compact                   merge the search index, checkpoint and VACUUM the SQLite stores (server stopped)
  reembed                   give every document vectors of KB_EMBEDDINGS's model and switch searches to them
                            (server stopped; a running server does the same in the background when started
                            with a new KB_EMBEDDINGS)
  reembed --watch <url>     follow a running server's model change on its /readyz until it switches`;

/** The commands that open the data dir's stores (the container). */
const COMMANDS = new Set(['rebuild', 'projections', 'verify', 'compact', 'export', 'project', 'reembed']);

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  if (command === 'sql') return sql(args);
  if (command === 'reembed' && args[0] === '--watch') return watchReembedding(args[1]);
  if (!COMMANDS.has(command ?? '')) {
    console.error(USAGE);
    return command ? 2 : 0;
  }
  await import('reflect-metadata');
  const { loadConfig } = await import('./config/config');
  const { createLogger } = await import('./app/logger');
  const { buildContainer, closeContainer } = await import('./container');
  const config = loadConfig();
  const logger = createLogger(process.env.KB_LOG_LEVEL ?? 'warn');
  const { ctx, di } = await buildContainer(config, logger, { logOnly: true });
  try {
    switch (command) {
      case 'rebuild': {
        const names = args.filter((a) => !a.startsWith('-'));
        const unknown = names.filter((n) => !ctx.projections.some((p) => p.name === n));
        if (unknown.length) {
          console.error(`unknown projection(s): ${unknown.join(', ')}; known: ${ctx.projections.map((p) => p.name).join(', ')}`);
          return 2;
        }
        const chosen = names.length ? ctx.projections.filter((p) => names.includes(p.name)) : ctx.projections;
        const { rebuildProjections } = await import('./core/projectionRunner');
        const r = await rebuildProjections(ctx.eventStore, chosen, (i) => progress('rebuild', i.position, i.head), { transaction: ctx.runner.batchTransaction, bulkLoad: (fn) => ctx.readStore.bulkLoad(fn) });
        const rate = r.seconds > 0 ? Math.round(r.events / r.seconds) : r.events;
        console.log(
          `rebuilt ${chosen.map((p) => p.name).join(', ')}: ${r.events} events applied in ${r.seconds.toFixed(2)} s (${rate} events/s; ${r.applied} projection updates)`,
        );
        return 0;
      }
      case 'projections': {
        const head = await ctx.eventStore.headPosition();
        for (const p of ctx.projections) {
          const at = await p.checkpoint();
          // A projection that stores its checkpoint only with the batches it acts on (the search
          // index, in one process) may be behind the head yet have nothing left to apply.
          const types = p.eventTypes;
          let note = '';
          if (types && at < head) {
            let pending = 0;
            for (let from = at; from < head; ) {
              const batch = await ctx.eventStore.readAll(from, 2000);
              if (batch.length === 0) break;
              pending += batch.filter((e) => types.has(e.type)).length;
              from = batch[batch.length - 1].position;
            }
            note = pending === 0 ? '\t(up to date: none of the events after its checkpoint is one it acts on)' : `\t(${pending} event${pending === 1 ? '' : 's'} to apply)`;
          }
          console.log(`${p.name}\t${at}/${head}${note}`);
        }
        return 0;
      }
      case 'verify': {
        const { verifyEventLog } = await import('./adapters/sqlite/verifyEventLog');
        const r = verifyEventLog(path.join(ctx.config.dataDir, 'events.db'), (d, t) => progress('verify', d, t));
        if (r.firstBreak) {
          const b = r.firstBreak;
          console.log(`chain broken at position ${b.position} (event ${b.id}, ${b.type}): ${b.reason}; ${r.checked} events checked`);
          return 1;
        }
        console.log(`ok: ${r.checked} events checked, hash chain intact`);
        return 0;
      }
      case 'compact': {
        const { compactDataDir } = await import('./audit/compact');
        compactDataDir(ctx.config.dataDir, (l) => console.log(l));
        return 0;
      }
      case 'export': {
        const { exportEvents, parseOptions } = await import('./audit/export');
        const o = parseOptions(args);
        if (o.format === 'parquet') {
          const { DEFAULT_EXPORT_DIR, exportParquet } = await import('./analytics/parquet');
          const out = o.out ?? DEFAULT_EXPORT_DIR;
          const r = await exportParquet(ctx.eventStore, { out, workspaceId: o.workspace, onProgress: (d, t) => progress('export', d, t) });
          for (const f of r.files) console.error(`${path.join(out, f.file)}\t${f.rows} rows\t${f.bytes} bytes`);
          console.error(`exported ${r.events} events to ${out} in ${r.seconds.toFixed(2)} s`);
          return 0;
        }
        if (o.format !== undefined && o.format !== 'ndjson') {
          console.error('--format must be ndjson or parquet');
          return 2;
        }
        const r = await exportEvents(ctx.eventStore, { from: o.from, workspaceId: o.workspace, out: o.out, onProgress: (d, t) => progress('export', d, t) });
        if (o.out) console.error(`exported ${r.written} events to ${o.out}`);
        return 0;
      }
      case 'project': {
        const { runProjectCommand } = await import('./analytics/projectCommand');
        return await runProjectCommand(ctx.eventStore, ctx.config.dataDir, args, progress);
      }
      case 'reembed': {
        const { Reembedder } = await import('./processing/reembedder');
        // The projections run here (the search index applies the change), the re-embedder to its end.
        await ctx.runner.start();
        const reembedder = new Reembedder(ctx, ctx.embeddingModels, { follow: false });
        const started = Date.now();
        const report = progressReporter();
        const outcome = await reembedder.runToCompletion(report);
        await ctx.runner.waitFor(await ctx.eventStore.headPosition(), 60_000);
        const { active } = await ctx.searchIndex.vectorModels();
        const seconds = ((Date.now() - started) / 1000).toFixed(1);
        if (outcome === 'nothing-to-do') console.log(`nothing to do: the search index answers with ${active?.modelId ?? 'no vectors yet'}, as KB_EMBEDDINGS asks`);
        else if (outcome === 'completed') console.log(`re-embedded: searches now use ${active?.modelId} (${seconds} s)`);
        else console.log(`model change ${outcome} after ${seconds} s; the index answers with ${active?.modelId}`);
        await ctx.runner.stop();
        return outcome === 'completed' || outcome === 'nothing-to-do' ? 0 : 1;
      }
      default:
        console.error(USAGE);
        return command ? 2 : 0;
    }
  } finally {
    await closeContainer(di);
  }
}

/** A progress bar on a terminal; elsewhere a line every 5 s (and the last one). */
function progressReporter(): (p: ReembeddingProgress) => void {
  let lastLine = 0;
  return (p) => {
    const label = `reembed ${p.from} → ${p.to}`;
    if (process.stderr.isTTY) return progress(label, p.done, p.total);
    if (Date.now() - lastLine < 5000 && p.done < p.total) return;
    lastLine = Date.now();
    console.error(`${label}: ${p.done}/${p.total} documents`);
  };
}

/** `reembed --watch <url>`: the progress a running server reports on /readyz, until the change is over. */
async function watchReembedding(url: string | undefined): Promise<number> {
  if (!url || !/^https?:\/\//.test(url)) {
    console.error('usage: reembed --watch http://host:port');
    return 2;
  }
  const report = progressReporter();
  let seen = false;
  for (;;) {
    const res = await fetch(new URL('/readyz', url));
    const body = (await res.json()) as { reembedding?: ReembeddingProgress };
    if (body.reembedding) {
      seen = true;
      report(body.reembedding);
    } else {
      console.log(seen ? 'the model change is over: searches use the new vectors' : 'no model change under way');
      return 0;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** `sql "<query>" [--csv] [--dir dir]`: needs no data dir, only the export. */
async function sql(args: string[]): Promise<number> {
  const { parseOptions } = await import('./audit/export');
  const { DEFAULT_EXPORT_DIR, formatTable, runSql } = await import('./analytics/parquet');
  const { toCsv } = await import('./analytics/csv');
  const query = args[0] && !args[0].startsWith('--') ? args[0] : undefined;
  const o = parseOptions(args.slice(1));
  if (!query) {
    console.error('usage: sql "<query>" [--csv] [--dir dir]');
    return 2;
  }
  const r = await runSql(o.dir ?? DEFAULT_EXPORT_DIR, query);
  process.stdout.write(o.csv ? toCsv([r.columns, ...r.rows]) : formatTable(r));
  return 0;
}

main(process.argv.slice(2))
  .then((code) => process.exit(code))
  .catch((err) => {
    console.error('error:', err instanceof Error ? err.message : err);
    process.exit(1);
  });
