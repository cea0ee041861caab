/**
 * Event-sourced core benchmarks: durable appends through the port, durable commands per
 * second through the HTTP API (1 and 16 concurrent clients), projection rebuild rate.
 */
import autocannon from 'autocannon';
import { randomUUID } from 'node:crypto';
import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteEventStore } from '../src/adapters/sqlite/sqliteEventStore';
import { NewEvent } from '../src/domain/event';
import { loadConfig } from '../src/config/config';
import { createLogger } from '../src/app/logger';
import { buildContainer, closeContainer } from '../src/container';
import { rebuildProjections } from '../src/core/projectionRunner';
import { repoRoot } from '../src/util/paths';
import { figure } from './targets';

const load = (): string => os.loadavg().map((l) => l.toFixed(2)).join(' ');

/** CPU time (user + system, ms) a process has used so far, from /proc (Linux); undefined elsewhere. */
export function cpuMsOf(pid: number | undefined): number | undefined {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

/** CPU time (ms) of each thread of a process by thread name (the main thread as `main`), from /proc (Linux). */
export function threadCpuMsOf(pid: number | undefined): Map<string, number> {
  const byName = new Map<string, number>();
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const name = tid === String(pid) ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).trim();
        const fields = stat.split(') ')[1].split(' ');
        byName.set(name, (byName.get(name) ?? 0) + ((Number(fields[11]) + Number(fields[12])) * 1000) / 100);
      } catch {
        // the thread ended
      }
    }
  } catch {
    // not Linux, or the process ended
  }
  return byName;
}

/** `main 412, libuv-worker 40, ...` µs per command by thread between two readings. */
function threadShares(before: Map<string, number>, after: Map<string, number>, commands: number): string {
  return [...after]
    .map(([name, ms]) => [name, ((ms - (before.get(name) ?? 0)) / commands) * 1000] as const)
    .filter(([, us]) => us >= 1)
    .sort((a, b) => b[1] - a[1])
    .map(([name, us]) => `${name} ${Math.round(us)}`)
    .join(', ');
}

export const tmp = (p: string) => fs.mkdtempSync(path.join(os.tmpdir(), p));

function event(type: string, data: Record<string, unknown>): NewEvent {
  return {
    id: randomUUID(),
    type,
    data,
    metadata: { actorId: 'bench', authMethod: 'system', correlationId: randomUUID(), occurredAt: new Date().toISOString(), schemaVersion: 1, workspaceId: String(data.workspaceId ?? '') },
  };
}

async function benchAppends(): Promise<void> {
  const dir = tmp('kb-bench-es-');
  const store = new SqliteEventStore(path.join(dir, 'events.db'), { synchronous: 'full' });
  const n = 2000;
  let t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await store.append(`bench-seq-${i % 50}`, [event('BenchEvent', { i })], 'any');
  const seq = n / (Number(process.hrtime.bigint() - t) / 1e9);
  for (const concurrency of [16, 64]) {
    t = process.hrtime.bigint();
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async (_, c) => {
        while (next < n * 5) {
          next++;
          await store.append(`bench-c${c}`, [event('BenchEvent', { c })], 'any');
        }
      }),
    );
    const rate = (n * 5) / (Number(process.hrtime.bigint() - t) / 1e9);
    console.log(`  appends through the port, ${concurrency} concurrent writers (group commit, fsync per commit): ${Math.round(rate)} events/s`);
  }
  console.log(`  appends through the port, 1 writer awaiting each (fsync per append): ${Math.round(seq)} events/s`);
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

/** The port a child process announces on its stdout as `<marker> <port>`; rejects if it exits first. */
export function announcedPort(proc: ChildProcess, marker: string): Promise<number> {
  const line = new RegExp(`${marker} (\\d+)`);
  return new Promise<number>((resolve, reject) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = line.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', (code) => reject(new Error(`${path.basename(String(proc.spawnargs.at(-1)))} exited ${code} before it listened`)));
  });
}

/**
 * The server of the HTTP bench. BENCH_SERVER_NODE_ARGS adds node options (e.g.
 * `--cpu-prof --cpu-prof-dir=DIR` to profile it); BENCH_SERVER_LOG_LEVEL sets its log level
 * (default warn: no access log), BENCH_RATE_LIMITS=on keeps the write rate limit on,
 * BENCH_SERVER_MAIN runs another build's main.js (to compare two builds under the same load).
 */
export async function startServer(dataDir: string, main = process.env.BENCH_SERVER_MAIN ?? path.join(repoRoot, 'dist/src/main.js')): Promise<{ url: string; proc: ChildProcess }> {
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const proc = spawn(process.execPath, [...nodeArgs, main], {
    env: {
      ...process.env,
      PORT: '0',
      KB_DATA_DIR: dataDir,
      KB_ANNOUNCE_PORT: '1',
      KB_RATE_LIMITS: process.env.BENCH_RATE_LIMITS === 'on' ? 'on' : 'off',
      KB_LOG_LEVEL: process.env.BENCH_SERVER_LOG_LEVEL ?? 'warn',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await announcedPort(proc, 'KB_LISTENING');
  return { url: `http://127.0.0.1:${port}`, proc };
}

async function json(url: string, method: string, body: unknown, token?: string): Promise<any> {
  const res = await fetch(url, { method, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
  return res.json();
}

/** Sum and count of a histogram of the server's /metrics (unlabelled), to tell the mean between two readings. */
async function histogram(url: string, name: string): Promise<{ sum: number; count: number } | undefined> {
  try {
    const text = await (await fetch(`${url}/metrics`)).text();
    const value = (suffix: string) => Number(new RegExp(`^${name}_${suffix} (\\S+)$`, 'm').exec(text)?.[1]);
    const sum = value('sum');
    const count = value('count');
    return Number.isFinite(sum) && Number.isFinite(count) ? { sum, count } : undefined;
  } catch {
    return undefined;
  }
}

/** A user, and one workspace with one tag per client (so clients do not contend for one stream). */
export interface TagBenchSeed {
  accessToken: string;
  targets: { ws: string; tag: string }[];
}

export async function seedTagBench(url: string): Promise<TagBenchSeed> {
  await json(`${url}/v1/auth/register`, 'POST', { email: 'bench@example.com', password: 'benchmark-password', name: 'Bench' });
  const { accessToken } = await json(`${url}/v1/auth/login`, 'POST', { email: 'bench@example.com', password: 'benchmark-password' });
  const targets: { ws: string; tag: string }[] = [];
  for (let i = 0; i < 16; i++) {
    const ws = (await json(`${url}/v1/workspaces`, 'POST', { name: `bench ${i}` }, accessToken)).id;
    const tag = (await json(`${url}/v1/workspaces/${ws}/tags`, 'POST', { name: 'tag', color: '#000000' }, accessToken)).id;
    targets.push({ ws, tag });
  }
  return { accessToken, targets };
}

/** `connections` clients renaming their tags back to back for `seconds` (PUT /v1/workspaces/:id/tags/:tagId). */
export function renameTags(url: string, seed: TagBenchSeed, connections: number, seconds: number): Promise<autocannon.Result> {
  let seq = 0;
  return autocannon({
    url,
    connections,
    duration: seconds,
    requests: [
      {
        setupRequest: (req, context) => {
          const c = context as { slot?: number };
          if (c.slot === undefined) c.slot = seq++ % seed.targets.length;
          const t = seed.targets[c.slot];
          return {
            ...req,
            method: 'PUT',
            path: `/v1/workspaces/${t.ws}/tags/${t.tag}`,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${seed.accessToken}` },
            body: JSON.stringify({ name: `tag-${randomUUID()}` }),
          };
        },
      },
    ],
  });
}

async function benchHttpCommands(seconds: number, clients: readonly number[]): Promise<void> {
  const dir = tmp('kb-bench-http-');
  const { url, proc } = await startServer(dir);
  try {
    // The server's start-up warm-up (model, spare worker, rehearsal) is not the commands' CPU.
    while ((await fetch(`${url}/readyz`).then((r) => (r.arrayBuffer(), r.status))) !== 200) await new Promise((r) => setTimeout(r, 20));
    const seed = await seedTagBench(url);
    for (const connections of clients) {
      const commitsBefore = await histogram(url, 'kb_event_store_group_commit_appends');
      const cpuBefore = cpuMsOf(proc.pid);
      const threadsBefore = threadCpuMsOf(proc.pid);
      const benchCpuBefore = process.cpuUsage();
      const result = await renameTags(url, seed, connections, seconds);
      const ok = result['2xx'];
      const cpuAfter = cpuMsOf(proc.pid);
      const threadsAfter = threadCpuMsOf(proc.pid);
      const benchCpu = process.cpuUsage(benchCpuBefore);
      const commitsAfter = await histogram(url, 'kb_event_store_group_commit_appends');
      const commits = commitsBefore && commitsAfter ? commitsAfter.count - commitsBefore.count : 0;
      const perCommit = commits > 0 ? `, ${((commitsAfter!.sum - commitsBefore!.sum) / commits).toFixed(1)} appends per group commit` : '';
      // The server's own CPU per command: less sensitive than the rate to what else runs on the machine.
      const cpuPerCommand =
        cpuBefore !== undefined && cpuAfter !== undefined && ok > 0
          ? `, server CPU ${Math.round(((cpuAfter - cpuBefore) / ok) * 1000)} µs/command (${Math.round(((cpuAfter - cpuBefore) / 1000 / result.duration) * 100)}% of a core; client ${Math.round((benchCpu.user + benchCpu.system) / 1000 / 10 / result.duration)}%)`
          : '';
      console.log(
        `  HTTP durable commands (rename a tag), ${connections} client(s): ${Math.round(ok / result.duration)} commands/s, latency p50 ${result.latency.p50} ms p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}${cpuPerCommand}${perCommit}, load average ${load()}`,
      );
      if (ok > 0 && threadsAfter.size > 0) console.log(`    server CPU by thread, µs/command: ${threadShares(threadsBefore, threadsAfter, ok)}`);
      if (connections === 16) figure('core', 'durable HTTP commands, 16 clients (fsync on)', ok / result.duration, 'commands/s', { kind: 'min', value: 3000 });
    }
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.on('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchRebuild(total = 100_000): Promise<void> {
  const dir = tmp('kb-bench-rebuild-');
  const config = loadConfig({ ...process.env, KB_DATA_DIR: dir });
  const { ctx, di } = await buildContainer(config, createLogger('silent'));
  try {
    const perWorkspace = 100;
    const batch: Promise<unknown>[] = [];
    for (let w = 0; w < total / perWorkspace; w++) {
      const workspaceId = randomUUID();
      const events: NewEvent[] = [
        event('WorkspaceCreated', { workspaceId, name: `w${w}`, ownerId: 'u', createdAt: new Date().toISOString(), settings: { allowPublicSearchLinks: true, defaultDocumentPurpose: 'KNOWLEDGE' } }),
      ];
      for (let i = 1; i < perWorkspace; i++) {
        events.push(i % 3 === 0 ? event('MemberAdded', { workspaceId, userId: `u${i}`, role: 'MEMBER', joinedAt: new Date().toISOString() }) : event('TagCreated', { workspaceId, tagId: randomUUID(), name: `t${i}`, color: '#000000' }));
      }
      batch.push(ctx.eventStore.append(`workspace-${workspaceId}`, events, 'no_stream'));
      if (batch.length >= 50) await Promise.all(batch.splice(0));
    }
    await Promise.all(batch);
    // Nothing else of this process runs during the rebuild: the embedding model's warm-up is
    // over, and the garbage of generating the log is collected.
    await ctx.warmup.done;
    (globalThis as { gc?: () => void }).gc?.();
    const cpu = process.cpuUsage();
    const threadsBefore = threadCpuMsOf(process.pid);
    const mainBefore = threadsBefore.get('main');
    const r = await rebuildProjections(ctx.eventStore, ctx.projections, undefined, { transaction: ctx.runner.batchTransaction, bulkLoad: (fn) => ctx.readStore.bulkLoad(fn) });
    const threadsAfter = threadCpuMsOf(process.pid);
    const mainAfter = threadsAfter.get('main');
    const used = process.cpuUsage(cpu);
    // Every thread's share (the read store's writer thread ends with the load: its CPU is what
    // the process used beyond the threads still alive).
    const byThread = [...threadsAfter]
      .map(([name, ms]) => [name, ms - (threadsBefore.get(name) ?? 0)] as const)
      .filter(([, ms]) => ms >= 50)
      .map(([name, ms]) => `${name} ${(ms / 1000).toFixed(2)}`);
    const cpuSeconds = (used.user + used.system) / 1e6;
    // The main thread reads the log and runs the projections: with the spans committed on the
    // read store's writer thread, its CPU is the rebuild's critical path.
    const mainCpu = mainBefore !== undefined && mainAfter !== undefined ? `, of which the main thread ${((mainAfter - mainBefore) / 1000).toFixed(2)} s` : '';
    // CPU time of the whole process (the search index's worker thread included): on a shared
    // machine the events per CPU-second say more than the wall-clock rate.
    console.log(
      `  projection rebuild (all ${ctx.projections.length} projections, incl. search index and audit): ${r.events} log events in ${r.seconds.toFixed(2)} s = ${Math.round(r.events / r.seconds)} events/s (${Math.round(r.applied / r.seconds)} projection updates/s; ${cpuSeconds.toFixed(2)} s CPU${mainCpu} = ${Math.round(r.events / cpuSeconds)} events per CPU-second), load average ${load()}`,
    );
    console.log(`    CPU by thread, s: ${byThread.join(', ')} (threads that ended during the rebuild are not listed)`);
    figure('core', 'projection rebuild, all projections', r.events / r.seconds, 'events/s', { kind: 'min', value: 100_000 });
  } finally {
    await closeContainer(di);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const CORE_PARTS = ['appends', 'http', 'rebuild'] as const;
type CorePart = (typeof CORE_PARTS)[number];

export interface CoreOptions {
  /** Which parts to run (`--parts http,rebuild`); all by default. */
  parts: ReadonlySet<CorePart>;
  /** Seconds of load per HTTP run with 16 clients (`--http-seconds N`, default 8). */
  httpSeconds: number;
  /** Concurrent clients of each HTTP run (`--http-clients 1,16`, the default). */
  httpClients: number[];
  /** Events of the rebuild's generated log (`--rebuild-events N`, default 100,000). */
  rebuildEvents: number;
}

export function coreOptions(args: string[]): CoreOptions {
  const valueOf = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  // `--rebuild-only`: the projection rebuild alone (as `--parts rebuild`).
  const parts = (args.includes('--rebuild-only') ? 'rebuild' : (valueOf('--parts') ?? CORE_PARTS.join(','))).split(',').filter(Boolean);
  const unknown = parts.filter((p) => !(CORE_PARTS as readonly string[]).includes(p));
  if (unknown.length) throw new Error(`--parts: unknown part(s) ${unknown.join(', ')}; available: ${CORE_PARTS.join(', ')}`);
  const httpSeconds = Number(valueOf('--http-seconds') ?? 8);
  if (!Number.isFinite(httpSeconds) || httpSeconds < 1) throw new Error('--http-seconds: a number of seconds, at least 1');
  const httpClients = (valueOf('--http-clients') ?? '1,16').split(',').map(Number);
  if (httpClients.some((c) => !Number.isInteger(c) || c < 1 || c > 16)) throw new Error('--http-clients: numbers of clients from 1 to 16, comma-separated');
  const rebuildEvents = Number(valueOf('--rebuild-events') ?? 100_000);
  if (!Number.isInteger(rebuildEvents) || rebuildEvents < 100) throw new Error('--rebuild-events takes a whole number of at least 100');
  return { parts: new Set(parts as CorePart[]), httpSeconds, httpClients, rebuildEvents };
}

export async function benchCore(options: CoreOptions = coreOptions([])): Promise<void> {
  console.log('Event-sourced core (embedded SQLite, synchronous=FULL)');
  if (options.parts.has('appends')) await benchAppends();
  if (options.parts.has('http')) await benchHttpCommands(options.httpSeconds, options.httpClients);
  if (options.parts.has('rebuild')) await benchRebuild(options.rebuildEvents);
}

if (require.main === module) {
  benchCore(coreOptions(process.argv.slice(2))).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
