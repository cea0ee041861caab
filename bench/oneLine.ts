/**
 * Files of one huge line through the server: for each build given (`name=path/to/main.js`,
 * default `after=dist/src/main.js`) and each shape, a fresh server and data dir, one upload,
 * then polls until the document's final status. Prints the time to that status, the
 * server's CPU (all threads, from /proc), its peak RSS (VmHWM), the final status, the error
 * code and the chunk count, beside the load average.
 *
 *   node dist/bench/oneLine.js [--mb 50] [--shapes md-words,md-word,txt-words,txt-word,md-lines] before=OLD/dist/src/main.js after=dist/src/main.js
 *
 * Shapes: `md-words` / `txt-words` one line of words separated by spaces (no newline),
 * `md-word` / `txt-word` one "word" of letters with no space, `md-lines` the same words as
 * ordinary lines of ~100 characters (the comparison: a normal file of that size).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cpuMsOf, startServer, tmp } from './core';
import { call } from './apiCall';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const WORDS = ['harbour', 'granite', 'lantern', 'meadow', 'quartz', 'tide', 'river', 'ledger', 'compass', 'ember', 'falcon', 'café', 'naïve', 'zephyr'];

function makeFile(shape: string, bytes: number): { name: string; data: Buffer } {
  const ext = shape.startsWith('txt') ? 'txt' : 'md';
  const parts: string[] = [];
  let size = 0;
  let seed = 11;
  const next = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648);
  if (shape.endsWith('-word')) {
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    const block = Array.from({ length: 65536 }, () => letters[next() % 26]).join('');
    while (size < bytes) {
      parts.push(block);
      size += block.length;
    }
    return { name: `one-word.${ext}`, data: Buffer.from(parts.join('')) };
  }
  let line = '';
  while (size < bytes) {
    const w = WORDS[next() % WORDS.length];
    if (shape.endsWith('-lines') && line.length > 100) {
      parts.push(line + '\n');
      size += Buffer.byteLength(line) + 1;
      line = '';
    }
    line += (line ? ' ' : '') + w;
    if (!shape.endsWith('-lines') && line.length > 65536) {
      parts.push(line + ' ');
      size += Buffer.byteLength(line) + 1;
      line = '';
    }
  }
  parts.push(line);
  return { name: `${shape}.${ext}`, data: Buffer.from(parts.join('').trimEnd()) };
}

function peakRssMb(pid: number | undefined): number {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

async function once(build: string, main: string, shape: string, bytes: number): Promise<void> {
  const dir = tmp('kb-bench-oneline-');
  const { url, proc } = await startServer(dir, main);
  try {
    const email = `one-line-${Date.now()}@example.com`;
    await call(`${url}/v1/auth/register`, 'POST', undefined, { email, password: 'correct horse battery', name: 'One line' });
    const token = (await call(`${url}/v1/auth/login`, 'POST', undefined, { email, password: 'correct horse battery' })).accessToken as string;
    const ws = (await call(`${url}/v1/workspaces`, 'POST', token, { name: 'One line' })).id as string;
    for (let i = 0; i < 200; i++) {
      const r = await fetch(`${url}/readyz`);
      if (r.status === 200) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    const file = makeFile(shape, bytes);
    const fd = new FormData();
    fd.append('file', new Blob([file.data]), file.name);
    const cpu0 = cpuMsOf(proc.pid) ?? 0;
    const t0 = performance.now();
    const doc = await call(`${url}/v1/workspaces/${ws}/documents`, 'POST', token, fd);
    let d: any;
    for (;;) {
      d = await call(`${url}/v1/workspaces/${ws}/documents/${doc.id}`, 'GET', token);
      if (d.processingStatus === 'VERIFIED' || d.processingStatus === 'FAILED') break;
      if (performance.now() - t0 > 600_000) throw new Error('no final status within 10 minutes');
      await new Promise((res) => setTimeout(res, 200));
    }
    const ms = performance.now() - t0;
    const cpuMs = (cpuMsOf(proc.pid) ?? 0) - cpu0;
    // Searchable: words of the file find it (a file of one random "word" has no word to search for).
    const hits = d.processingStatus === 'VERIFIED' && !shape.endsWith('-word') ? ((await call(`${url}/v1/workspaces/${ws}/search`, 'POST', token, { query: 'zephyr lantern', limit: 5 })).results as { documentId: string }[]) : [];
    console.log(
      `${build.padEnd(8)} ${shape.padEnd(10)} ${(file.data.length / 1048576).toFixed(1)} MB: ${d.processingStatus}${d.error ? ` ${d.error.code} (${String(d.error.message).slice(0, 90)})` : ''}` +
        ` chunks ${d.chunkCount ?? 0}, search hits ${shape.endsWith('-word') ? 'n/a' : hits.filter((h) => h.documentId === doc.id).length}, ${(ms / 1000).toFixed(1)} s to final status, server CPU ${(cpuMs / 1000).toFixed(1)} s, peak RSS ${peakRssMb(proc.pid).toFixed(0)} MB` +
        ` (load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')})`,
    );
  } finally {
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const bytes = Number(arg('mb', '50')) * 1024 * 1024;
  const shapes = arg('shapes', 'md-words,md-word,txt-words,txt-word,md-lines').split(',');
  const builds = process.argv.slice(2).filter((a) => /^[\w-]+=/.test(a)).map((a) => a.split('=') as [string, string]);
  if (builds.length === 0) builds.push(['after', path.join(__dirname, '..', 'src', 'main.js')]);
  for (const shape of shapes) for (const [name, main] of builds) await once(name, path.resolve(main), shape, bytes);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
