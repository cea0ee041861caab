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
function cpuMsOf(pid: number | undefined): number | undefined {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

const tmp = (p: string) => fs.mkdtempSync(path.join(os.tmpdir(), p));

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

async function startServer(dataDir: string): Promise<{ url: string; proc: ChildProcess }> {
  const proc = spawn(process.execPath, [path.join(repoRoot, 'dist/src/main.js')], {
    env: { ...process.env, PORT: '0', KB_DATA_DIR: dataDir, KB_ANNOUNCE_PORT: '1', KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /KB_LISTENING (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, proc };
}

async function json(url: string, method: string, body: unknown, token?: string): Promise<any> {
  const res = await fetch(url, { method, headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
  return res.json();
}

async function benchHttpCommands(): Promise<void> {
  const dir = tmp('kb-bench-http-');
  const { url, proc } = await startServer(dir);
  try {
    await json(`${url}/v1/auth/register`, 'POST', { email: 'bench@example.com', password: 'benchmark-password', name: 'Bench' });
    const { accessToken } = await json(`${url}/v1/auth/login`, 'POST', { email: 'bench@example.com', password: 'benchmark-password' });
    // One workspace and tag per client, so clients do not contend for one stream.
    const targets: { ws: string; tag: string }[] = [];
    for (let i = 0; i < 16; i++) {
      const ws = (await json(`${url}/v1/workspaces`, 'POST', { name: `bench ${i}` }, accessToken)).id;
      const tag = (await json(`${url}/v1/workspaces/${ws}/tags`, 'POST', { name: 'tag', color: '#000000' }, accessToken)).id;
      targets.push({ ws, tag });
    }
    for (const connections of [1, 16]) {
      let seq = 0;
      const cpuBefore = cpuMsOf(proc.pid);
      const result = await autocannon({
        url,
        connections,
        duration: 8,
        requests: [
          {
            setupRequest: (req, context) => {
              const c = context as { slot?: number };
              if (c.slot === undefined) c.slot = seq++ % targets.length;
              const t = targets[c.slot];
              return {
                ...req,
                method: 'PUT',
                path: `/v1/workspaces/${t.ws}/tags/${t.tag}`,
                headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
                body: JSON.stringify({ name: `tag-${randomUUID()}` }),
              };
            },
          },
        ],
      });
      const ok = result['2xx'];
      const cpuAfter = cpuMsOf(proc.pid);
      // The server's own CPU per command: less sensitive than the rate to what else runs on the machine.
      const cpuPerCommand = cpuBefore !== undefined && cpuAfter !== undefined && ok > 0 ? `, server CPU ${Math.round(((cpuAfter - cpuBefore) / ok) * 1000)} µs/command` : '';
      console.log(
        `  HTTP durable commands (rename a tag), ${connections} client(s): ${Math.round(ok / result.duration)} commands/s, latency p50 ${result.latency.p50} ms p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}${cpuPerCommand}, load average ${load()}`,
      );
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
    const r = await rebuildProjections(ctx.eventStore, ctx.projections, undefined, { transaction: ctx.runner.batchTransaction, bulkLoad: (fn) => ctx.readStore.bulkLoad(fn) });
    const used = process.cpuUsage(cpu);
    const cpuSeconds = (used.user + used.system) / 1e6;
    // CPU time of the whole process (the search index's worker thread included): on a shared
    // machine the events per CPU-second say more than the wall-clock rate.
    console.log(
      `  projection rebuild (all ${ctx.projections.length} projections, incl. search index and audit): ${r.events} log events in ${r.seconds.toFixed(2)} s = ${Math.round(r.events / r.seconds)} events/s (${Math.round(r.applied / r.seconds)} projection updates/s; ${cpuSeconds.toFixed(2)} s CPU = ${Math.round(r.events / cpuSeconds)} events per CPU-second), load average ${load()}`,
    );
    figure('core', 'projection rebuild, all projections', r.events / r.seconds, 'events/s', { kind: 'min', value: 100_000 });
  } finally {
    await closeContainer(di);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** `--rebuild-only`: the projection rebuild alone (`--rebuild-events N`, default 100,000). */
export async function benchCore(args: string[] = []): Promise<void> {
  const n = args.indexOf('--rebuild-events');
  const events = n >= 0 ? Number(args[n + 1]) : 100_000;
  if (!Number.isInteger(events) || events < 100) throw new Error('--rebuild-events takes a whole number of at least 100');
  if (args.includes('--rebuild-only')) return benchRebuild(events);
  console.log('Event-sourced core (embedded SQLite, synchronous=FULL)');
  await benchAppends();
  await benchHttpCommands();
  await benchRebuild(events);
}

if (require.main === module) {
  benchCore(process.argv.slice(2)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
