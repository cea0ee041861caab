import fs from 'node:fs';
import { EventStore } from '../ports/eventStore';
import { parseOptions } from '../audit/export';
import { runProjection } from './projectRunner';
import { toCsv } from './csv';

type Progress = (label: string, done: number, total: number, suffix?: string) => void;

/** `npm run kb -- project <file> [--workspace id] [--as-of time] [--format json|csv] [--out file] [--max-memory MB] [--step-timeout seconds]`; returns the exit code. */
export async function runProjectCommand(store: EventStore, dataDir: string, args: string[], progress: Progress): Promise<number> {
  const file = args[0] && !args[0].startsWith('--') ? args[0] : undefined;
  const o = parseOptions(args.slice(1));
  const format = o.format ?? 'json';
  if (!file || (format !== 'json' && format !== 'csv')) {
    console.error('usage: project <file> [--workspace id] [--as-of time] [--format json|csv] [--out file] [--max-memory MB] [--step-timeout seconds]');
    return 2;
  }
  const netns = process.env.KB_PROJECT_NETNS ?? 'auto';
  if (netns !== 'auto' && netns !== 'off') {
    console.error(`KB_PROJECT_NETNS must be auto or off, not ${netns}`);
    return 2;
  }
  const started = Date.now();
  const r = await runProjection(store, {
    file,
    workspaceId: o.workspace,
    asOf: o['as-of'],
    protectedPaths: [dataDir],
    networkNamespace: netns === 'auto',
    ...(o['max-memory'] !== undefined ? { maxMemoryMb: Number(o['max-memory']) } : {}),
    ...(o['step-timeout'] !== undefined ? { stepTimeoutMs: Number(o['step-timeout']) * 1000 } : {}),
    onProgress: (position, head) => {
      const s = (Date.now() - started) / 1000;
      progress('project', position, head, s > 0 ? ` ${Math.round(position / s)} events/s` : '');
    },
  });
  const value: unknown = JSON.parse(r.json);
  const text = format === 'csv' ? toCsv(value) : `${JSON.stringify(value, null, 2)}\n`;
  if (o.out) fs.writeFileSync(o.out, text, { mode: 0o600 });
  else process.stdout.write(text);
  const rate = r.seconds > 0 ? Math.round(r.scanned / r.seconds) : r.scanned;
  console.error(`projected ${r.matched} of ${r.scanned} events in ${r.seconds.toFixed(2)} s (${rate} events/s)${o.out ? `; result in ${o.out}` : ''}`);
  return 0;
}
