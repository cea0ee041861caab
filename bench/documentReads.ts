/**
 * What reading a large document's text or past costs the server: builds side by side (as
 * httpCompare), each seeded with one text document of `--mb` MB (default 5) in a
 * workspace, then for several rounds, each build in turn, `--at-once` concurrent GETs of the document's
 * text (`/text`) and its metadata as of a time (`?asOf=`). Prints per route and
 * build the server's CPU per request (all threads, from /proc), its peak RSS during the burst,
 * the burst's wall time and the load average.
 *
 *   node dist/bench/documentReads.js [--rounds 3] [--mb 5] [--at-once 8] before=/path/to/old/dist/src/main.js after=dist/src/main.js
 *
 * (The server takes its settings from the environment: `KB_WHOLE_DOCUMENT_READS_AT_ONCE=1000` lifts the bound on such reads.)
 */
import fs from 'node:fs';
import os from 'node:os';
import { ChildProcess } from 'node:child_process';
import { cpuMsOf, startServer, tmp } from './core';
import { call } from './apiCall';

interface Running {
  name: string;
  url: string;
  proc: ChildProcess;
  token: string;
  paths: Map<string, string>;
  results: Map<string, { cpuMs: number[]; peakMb: number[]; wallMs: number[] }>;
}

let CONCURRENT = 8;

function rssMbOf(pid: number | undefined): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** A text of about `mb` MB: sections of plain sentences. */
function largeText(mb: number): string {
  const words = ['refund', 'policy', 'customer', 'payment', 'invoice', 'shipping', 'delivery', 'account', 'support', 'service', 'order', 'return', 'product', 'warranty', 'billing'];
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < mb * 1024 * 1024; i++) {
    const s = `## Section ${i}\n\n${Array.from({ length: 120 }, (_, k) => words[(i * 7 + k * 13) % words.length] + (k % 17 === 0 ? '.' : '')).join(' ')}\n\n`;
    parts.push(s);
    size += s.length;
  }
  return parts.join('');
}

async function seed(url: string, mb: number): Promise<{ token: string; paths: Map<string, string> }> {
  const email = `reads-${Date.now()}@example.com`;
  await call(`${url}/v1/auth/register`, 'POST', undefined, { email, password: 'correct horse battery', name: 'Reads' });
  const token = (await call(`${url}/v1/auth/login`, 'POST', undefined, { email, password: 'correct horse battery' })).accessToken as string;
  const ws = (await call(`${url}/v1/workspaces`, 'POST', token, { name: 'Reads' })).id as string;
  const form = new FormData();
  form.append('file', new Blob([largeText(mb)]), 'large.txt');
  const doc = (await call(`${url}/v1/workspaces/${ws}/documents`, 'POST', token, form)).id as string;
  for (;;) {
    const d = await call(`${url}/v1/documents/${doc}`, 'GET', token);
    if (d.processingStatus === 'VERIFIED') {
      console.log(`  ${mb} MB text: ${d.chunkCount} chunks`);
      break;
    }
    if (d.processingStatus === 'FAILED') throw new Error(`the document failed: ${JSON.stringify(d.error)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const later = '2999-01-01T00:00:00Z';
  return {
    token,
    paths: new Map([
      ['text', `/v1/workspaces/${ws}/documents/${doc}/text`],
      ['document asOf', `/v1/documents/${doc}?asOf=${later}`],
    ]),
  };
}

async function burst(s: Running, route: string): Promise<void> {
  const path = s.paths.get(route) as string;
  const cpu0 = cpuMsOf(s.proc.pid) ?? 0;
  let peak = rssMbOf(s.proc.pid);
  const sampler = setInterval(() => (peak = Math.max(peak, rssMbOf(s.proc.pid))), 25);
  const t0 = Date.now();
  await Promise.all(Array.from({ length: CONCURRENT }, () => call(`${s.url}${path}`, 'GET', s.token)));
  const wall = Date.now() - t0;
  clearInterval(sampler);
  const r = s.results.get(route) ?? { cpuMs: [], peakMb: [], wallMs: [] };
  r.cpuMs.push(((cpuMsOf(s.proc.pid) ?? 0) - cpu0) / CONCURRENT);
  r.peakMb.push(peak);
  r.wallMs.push(wall);
  s.results.set(route, r);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const numberAfter = (name: string, fallback: number) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
  const rounds = numberAfter('--rounds', 3);
  const mb = numberAfter('--mb', 5);
  CONCURRENT = numberAfter('--at-once', 8);
  const builds = args.filter((a) => a.includes('=') && !a.startsWith('-')).map((a) => ({ name: a.slice(0, a.indexOf('=')), main: a.slice(a.indexOf('=') + 1) }));
  if (builds.length === 0) builds.push({ name: 'this', main: 'dist/src/main.js' });
  const servers: Running[] = [];
  try {
    for (const b of builds) {
      console.log(`${b.name}: seeding`);
      const { url, proc } = await startServer(tmp('kb-bench-reads-'), b.main);
      const s: Running = { name: b.name, url, proc, token: '', paths: new Map(), results: new Map() };
      servers.push(s); // stopped below whatever happens next
      Object.assign(s, await seed(url, mb));
    }
    const routes = [...servers[0].paths.keys()];
    for (const s of servers) for (const route of routes) await call(`${s.url}${s.paths.get(route)}`, 'GET', s.token); // warm-up
    for (let round = 1; round <= rounds; round++) {
      for (const route of routes) for (const s of round % 2 === 1 ? servers : [...servers].reverse()) await burst(s, route);
      console.log(`round ${round} done, load average ${os.loadavg()[0].toFixed(2)}`);
    }
    const fmt = (xs: number[], digits = 0) => xs.map((x) => x.toFixed(digits)).join(' / ');
    for (const route of routes) {
      for (const s of servers) {
        const r = s.results.get(route) as { cpuMs: number[]; peakMb: number[]; wallMs: number[] };
        console.log(`${route.padEnd(14)} ${s.name.padEnd(8)} server CPU per request ${fmt(r.cpuMs)} ms; peak RSS ${fmt(r.peakMb)} MB; ${CONCURRENT} at once ${fmt(r.wallMs)} ms`);
      }
    }
    console.log(`load average now ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  } finally {
    for (const s of servers) s.proc.kill('SIGTERM');
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
