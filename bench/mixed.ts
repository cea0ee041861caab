/**
 * Searches under mixed load, through the real server (a child process, default embedded
 * configuration, rate limits off), issue 13 "Under mixed load".
 *
 *   npm run bench -- mixed [--seconds 180] [--chunks 15000] [--keep DIR] [--search-interval 200]
 *   node dist/bench/mixed.js [same options]
 *
 * 1. Seed: one workspace holding a Cranfield-based corpus (../shared/eval/cranfield): each
 *    document is a "report" of 12 Cranfield abstracts drawn with a fixed seed, uploaded as
 *    text, until about `--chunks` chunks are VERIFIED (default 15,000). `--keep DIR` keeps the
 *    seeded data dir in DIR and later runs start from a copy of it.
 * 2. The server is restarted on (a copy of) that data dir. Searches alone, back to back, for a
 *    sixth of the run (5–20 s): the search capacity and the server's CPU per search. Then for
 *    `--seconds` (default 180), all at once:
 *    - 16 search clients, each POSTing /v1/workspaces/:id/search (limit 5), one search every
 *      200 ms at most (`--search-interval MS`; 0: back to back);
 *      half of the queries are Cranfield's 225 queries as they are (repeated during the run,
 *      so the query-embedding cache helps), half are new variants (a word dropped, two corpus
 *      words added: an embedding not seen before);
 *    - 8 writer clients, each renaming a tag in its own workspace back to back (a durable
 *      command with read-your-writes, as `core` measures);
 *    - one upload every 0.5 s into the searched workspace (a new report, ~13 chunks).
 *    The server's RSS and CPU are sampled every 5 s.
 * 3. At the end every upload must reach VERIFIED (nothing accepted is lost); the time the last
 *    one took after the load stopped is printed.
 *
 * Figures with targets: search p50 < 50 ms, p99 < 250 ms, writes ≥ 150/s, errors = 0, and
 * RSS growth after warm-up < 64 MB: after the warm-up (the first minute, or the first third of
 * a shorter run), the lowest RSS of the second half of the samples minus the lowest of the
 * first (RSS saw-tooths with major GCs; a leak raises the troughs). Set BENCH_SERVER_NODE_ARGS (e.g.
 * `--cpu-prof --cpu-prof-dir=/tmp/prof`) to profile the server, BENCH_SERVER_LOG=FILE to keep its output.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../src/util/paths';
import { figure } from './targets';
import { mulberry32 as rng } from '../src/util/random';

const BENCH = 'mixed';
const SEARCH_CLIENTS = 16;
const WRITERS = 8;
const UPLOAD_EVERY_MS = 500;
/** Uploads that may be in flight at once (the uploader never piles up requests without bound). */
const MAX_UPLOADS_IN_FLIGHT = 8;
const ABSTRACTS_PER_REPORT = 12;
const RSS_SAMPLE_MS = 5000;
const RSS_GROWTH_TARGET_MB = 64;
/**
 * Each search client starts a search every 200 ms at most (16 clients: 80 searches/s offered,
 * the rate issue 13 measured for searches alone), so the mixed figures show what writes and
 * uploads do to searches at a given search load. Back to back (`--search-interval 0`), 16
 * clients keep the server saturated and latency is 16 / throughput by Little's law.
 */
const DEFAULT_SEARCH_INTERVAL_MS = 200;

interface Options {
  seconds: number;
  chunks: number;
  keep?: string;
  /** Each search client starts a search at most this often; 0: back to back. */
  searchIntervalMs: number;
}

interface CranfieldDoc {
  id: number;
  title: string;
  body: string;
}

const cranfieldDir = (): string => path.resolve(repoRoot, '../shared/eval/cranfield');

function loadCranfield(): { docs: CranfieldDoc[]; queries: string[] } {
  const dir = cranfieldDir();
  const docs = JSON.parse(fs.readFileSync(path.join(dir, 'documents.json'), 'utf8')) as CranfieldDoc[];
  const queries = (JSON.parse(fs.readFileSync(path.join(dir, 'queries.json'), 'utf8')) as { text: string }[]).map((q) => q.text.replace(/\s+\.\s*$/, '').trim());
  return { docs: docs.filter((d) => d.body.trim().length > 0), queries };
}

/** Report `n`: ABSTRACTS_PER_REPORT abstracts chosen by a generator seeded with n (the same report for the same n). */
function report(docs: CranfieldDoc[], n: number): { name: string; text: string } {
  const rand = rng(0x5eed + n * 7919);
  const parts: string[] = [];
  let title = '';
  for (let i = 0; i < ABSTRACTS_PER_REPORT; i++) {
    const d = docs[Math.floor(rand() * docs.length)];
    if (i === 0) title = d.title.replace(/\s+\.\s*$/, '');
    parts.push(`## ${d.title.replace(/\s+\.\s*$/, '')}\n\n${d.body}`);
  }
  return { name: `report-${n}.md`, text: `# Report ${n}: ${title}\n\n${parts.join('\n\n')}\n` };
}

// ---------------------------------------------------------------- the server

interface Server {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

async function startServer(dataDir: string): Promise<Server> {
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const proc: ChildProcess = spawn(process.execPath, [...nodeArgs, path.join(repoRoot, 'dist/src/main.js')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', KB_DATA_DIR: dataDir, KB_ANNOUNCE_PORT: '1', KB_LOG_LEVEL: 'warn', KB_RATE_LIMITS: 'off' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  // BENCH_SERVER_LOG=FILE: the server's output is appended there (with BENCH_SERVER_NODE_ARGS=--trace-gc, say).
  const log = process.env.BENCH_SERVER_LOG;
  if (log) {
    proc.stdout?.on('data', (d: Buffer) => fs.appendFileSync(log, d));
    proc.stderr?.on('data', (d: Buffer) => fs.appendFileSync(log, d));
  }
  proc.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.length > 20_000) out = out.slice(-10_000);
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 60_000);
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /KB_LISTENING (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${out}`));
    });
  });
  const exited = new Promise<void>((r) => proc.on('exit', () => r()));
  return {
    url: `http://127.0.0.1:${port}`,
    pid: proc.pid!,
    stop: async () => {
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

/** Resident set size of a process in bytes (Linux /proc; `ps` elsewhere). */
function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux
  }
  return Number(execFileSync('ps', ['-o', 'rss=', '-p', String(pid)]).toString().trim()) * 1024;
}

/**
 * From the server's Prometheus exposition (default metrics): the main thread's JS heap in use,
 * and the event loop's delay since the previous read (p99 and max; prom-client resets its
 * histogram at each read), which shows how long the main thread was kept from new requests.
 */
async function mainThreadOf(url: string): Promise<{ heap?: number; lagP99?: number; lagMax?: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name: string): number | undefined => {
    const m = new RegExp(`^kb_${name} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  return { heap: value('nodejs_heap_size_used_bytes'), lagP99: value('nodejs_eventloop_lag_p99_seconds'), lagMax: value('nodejs_eventloop_lag_max_seconds') };
}

/** CPU seconds (user + system) a process has used, or undefined where /proc is missing. */
function cpuSecondsOf(pid: number): number | undefined {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------- HTTP helpers

interface Session {
  url: string;
  key: string;
}

async function call(s: Session | { url: string; key?: string }, method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${s.url}${p}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(s.key ? { authorization: `Bearer ${s.key}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function must(s: Session | { url: string; key?: string }, method: string, p: string, body?: unknown): Promise<any> {
  const r = await call(s, method, p, body);
  if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

async function upload(s: Session, ws: string, doc: { name: string; text: string }): Promise<{ status: number; id?: string; error?: string }> {
  const fd = new FormData();
  fd.append('file', new Blob([doc.text], { type: 'text/markdown' }), doc.name);
  const res = await fetch(`${s.url}/v1/workspaces/${ws}/documents`, { method: 'POST', headers: { authorization: `Bearer ${s.key}` }, body: fd });
  const body = (await res.json()) as { id?: string };
  return res.status === 201 && body.id ? { status: res.status, id: body.id } : { status: res.status, error: JSON.stringify(body) };
}

async function countByStatus(s: Session, ws: string, status: string): Promise<number> {
  return (await must(s, 'GET', `/v1/workspaces/${ws}/documents?status=${status}&limit=1`)).pagination.total as number;
}

/** Waits until no document of the workspace is PROCESSING; fails on a FAILED one. */
async function settled(s: Session, ws: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if ((await countByStatus(s, ws, 'FAILED')) > 0) throw new Error('a bench document FAILED');
    if ((await countByStatus(s, ws, 'PROCESSING')) === 0) return;
    if (Date.now() > until) throw new Error(`documents still PROCESSING after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

// ---------------------------------------------------------------- seeding

interface Seeded {
  key: string;
  corpus: string;
  writers: { ws: string; tag: string }[];
  reports: number;
  chunks: number;
}

const SEED_FILE = 'mixed-bench.json';

async function seed(dataDir: string, docs: CranfieldDoc[], targetChunks: number): Promise<Seeded> {
  const server = await startServer(dataDir);
  try {
    const anon = { url: server.url };
    await must(anon, 'POST', '/v1/auth/register', { email: 'mixed@example.com', password: 'mixed-bench-password', name: 'Mixed' });
    const { accessToken } = await must(anon, 'POST', '/v1/auth/login', { email: 'mixed@example.com', password: 'mixed-bench-password' });
    // An API key does not expire during a long run (an access token would after 15 minutes).
    const { key } = await must({ url: server.url, key: accessToken }, 'POST', '/v1/api-keys', { name: 'mixed bench' });
    const s: Session = { url: server.url, key };
    const corpus = (await must(s, 'POST', '/v1/workspaces', { name: 'Cranfield reports' })).id as string;
    const writers: Seeded['writers'] = [];
    for (let i = 0; i < WRITERS; i++) {
      const ws = (await must(s, 'POST', '/v1/workspaces', { name: `writer ${i}` })).id as string;
      const tag = (await must(s, 'POST', `/v1/workspaces/${ws}/tags`, { name: 'tag', color: '#336699' })).id as string;
      writers.push({ ws, tag });
    }
    // The first report tells how many chunks a report makes.
    const first = await upload(s, corpus, report(docs, 0));
    if (!first.id) throw new Error(`seed upload failed: ${first.error}`);
    await settled(s, corpus, 60_000);
    const perReport = (await must(s, 'GET', `/v1/workspaces/${corpus}/documents/${first.id}`)).chunkCount as number;
    const reports = Math.max(1, Math.round(targetChunks / perReport));
    const t0 = Date.now();
    let next = 1;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < reports) {
          const n = next++;
          const r = await upload(s, corpus, report(docs, n));
          if (!r.id) throw new Error(`seed upload failed: ${r.error}`);
          if (n % 200 === 0) console.log(`  seeding: ${n} of ${reports} reports uploaded (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
        }
      }),
    );
    await settled(s, corpus, 30 * 60_000);
    let chunks = 0;
    for (let page = 1; ; page++) {
      const list = await must(s, 'GET', `/v1/workspaces/${corpus}/documents?limit=100&page=${page}`);
      for (const d of list.data as { id: string }[]) chunks += (await must(s, 'GET', `/v1/workspaces/${corpus}/documents/${d.id}`)).chunkCount as number;
      if (page >= list.pagination.pages) break;
    }
    console.log(`  seeded ${reports} reports, ${chunks} chunks in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    return { key, corpus, writers, reports, chunks };
  } finally {
    await server.stop();
  }
}

// ---------------------------------------------------------------- the load

const pct = (sorted: number[], p: number): number => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : NaN);
const load = (): string => os.loadavg().map((l) => l.toFixed(2)).join(' ');
const mb = (bytes: number): number => bytes / 1048576;

function queryMaker(queries: string[], docs: CranfieldDoc[], seedValue: number): () => string {
  const rand = rng(seedValue);
  const vocab = [...new Set(docs.flatMap((d) => d.title.split(/\s+/)).filter((w) => /^[a-z]{4,}$/.test(w)))];
  return () => {
    const q = queries[Math.floor(rand() * queries.length)];
    if (rand() < 0.5) return q; // repeated: one of 225
    const words = q.split(/\s+/);
    words.splice(Math.floor(rand() * words.length), 1);
    words.push(vocab[Math.floor(rand() * vocab.length)], vocab[Math.floor(rand() * vocab.length)]);
    return words.join(' ');
  };
}

interface ErrorLog {
  count: number;
  samples: string[];
}

function noteError(log: ErrorLog, what: string): void {
  log.count += 1;
  if (log.samples.length < 5) log.samples.push(what);
}

interface LoadSpec {
  seconds: number;
  writers: boolean;
  uploads: boolean;
  /** Each search client starts a search at most this often (0: back to back). */
  searchIntervalMs: number;
  /** Report numbers for `uploads` (new reports beyond the seeded ones). */
  firstUpload: number;
}

interface LoadResult {
  elapsed: number;
  searchMs: number[];
  writes: number;
  writeMs: number[];
  uploaded: string[];
  uploadsSkipped: number;
  errors: { search: ErrorLog; write: ErrorLog; upload: ErrorLog };
  samples: { t: number; rss: number; heap?: number; lagP99?: number; lagMax?: number; cpu?: number; searches: number; writes: number }[];
  loadAtEnd: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs the clients for `spec.seconds` and samples the server meanwhile. */
async function runLoad(server: Server, seeded: Seeded, docs: CranfieldDoc[], queries: string[], spec: LoadSpec): Promise<LoadResult> {
  const s: Session = { url: server.url, key: seeded.key };
  const started = performance.now();
  const until = started + spec.seconds * 1000;
  const running = (): boolean => performance.now() < until;
  const errors = { search: { count: 0, samples: [] } as ErrorLog, write: { count: 0, samples: [] } as ErrorLog, upload: { count: 0, samples: [] } as ErrorLog };

  const searchMs: number[] = [];
  const searchers = Array.from({ length: SEARCH_CLIENTS }, async (_, c) => {
    const next = queryMaker(queries, docs, 1000 + c + spec.firstUpload);
    // Clients start spread over one interval, not in lockstep.
    if (spec.searchIntervalMs > 0) await sleep((c * spec.searchIntervalMs) / SEARCH_CLIENTS);
    while (running()) {
      const t0 = performance.now();
      try {
        const r = await call(s, 'POST', `/v1/workspaces/${seeded.corpus}/search`, { query: next(), limit: 5 });
        if (r.status !== 200) noteError(errors.search, `${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
        else searchMs.push(performance.now() - t0);
      } catch (err) {
        noteError(errors.search, String(err));
      }
      const rest = spec.searchIntervalMs - (performance.now() - t0);
      if (rest > 0 && running()) await sleep(rest);
    }
  });

  let writes = 0;
  const writeMs: number[] = [];
  const writers = (spec.writers ? seeded.writers : []).map(async ({ ws, tag }, w) => {
    for (let i = 0; running(); i++) {
      const t0 = performance.now();
      try {
        const r = await call(s, 'PUT', `/v1/workspaces/${ws}/tags/${tag}`, { name: `tag ${w}-${spec.firstUpload}-${i}` });
        if (r.status !== 200) noteError(errors.write, `${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
        else {
          writes += 1;
          writeMs.push(performance.now() - t0);
        }
      } catch (err) {
        noteError(errors.write, String(err));
      }
    }
  });

  const uploaded: string[] = [];
  let uploadsSkipped = 0;
  const uploads = (async () => {
    if (!spec.uploads) return;
    let inFlight = 0;
    const pending = new Set<Promise<void>>();
    for (let n = 0; running(); n++) {
      const wait = started + n * UPLOAD_EVERY_MS - performance.now();
      if (wait > 0) await sleep(wait);
      if (!running()) break;
      if (inFlight >= MAX_UPLOADS_IN_FLIGHT) {
        uploadsSkipped += 1;
        continue;
      }
      inFlight += 1;
      const p: Promise<void> = upload(s, seeded.corpus, report(docs, spec.firstUpload + n))
        .then((r) => {
          if (r.id) uploaded.push(r.id);
          else noteError(errors.upload, `${r.status} ${r.error?.slice(0, 200)}`);
        })
        .catch((err: unknown) => noteError(errors.upload, String(err)))
        .finally(() => {
          inFlight -= 1;
          pending.delete(p);
        });
      pending.add(p);
    }
    await Promise.all(pending);
  })();

  const samples: LoadResult['samples'] = [];
  const heapReads: Promise<void>[] = [];
  const sample = (): void => {
    const x: LoadResult['samples'][number] = { t: (performance.now() - started) / 1000, rss: rssOf(server.pid), cpu: cpuSecondsOf(server.pid), searches: searchMs.length, writes };
    samples.push(x);
    // The main thread's JS heap (from /metrics): tells JS objects from native memory when RSS grows.
    heapReads.push(
      mainThreadOf(server.url)
        .then((m) => {
          x.heap = m.heap;
          x.lagP99 = m.lagP99;
          x.lagMax = m.lagMax;
        })
        .catch(() => undefined),
    );
  };
  sample();
  const sampler = setInterval(sample, RSS_SAMPLE_MS);
  await Promise.all([...searchers, ...writers, uploads]);
  clearInterval(sampler);
  const elapsed = (performance.now() - started) / 1000;
  sample();
  await Promise.all(heapReads);
  return { elapsed, searchMs, writes, writeMs, uploaded, uploadsSkipped, errors, samples, loadAtEnd: load() };
}

function serverCpuSeconds(r: LoadResult): number | undefined {
  const a = r.samples[0].cpu;
  const b = r.samples[r.samples.length - 1].cpu;
  return a !== undefined && b !== undefined ? b - a : undefined;
}

function describeSearches(r: LoadResult): string {
  const sorted = [...r.searchMs].sort((a, b) => a - b);
  return (
    `searches: ${sorted.length} = ${(sorted.length / r.elapsed).toFixed(1)}/s, p50 ${pct(sorted, 0.5).toFixed(1)} ms, p95 ${pct(sorted, 0.95).toFixed(1)} ms, ` +
    `p99 ${pct(sorted, 0.99).toFixed(1)} ms, max ${sorted[sorted.length - 1]?.toFixed(1)} ms`
  );
}

function printTimeline(r: LoadResult): void {
  console.log(`  timeline (t s: RSS MB (main thread's JS heap used MB), server CPU % of one core, searches/s, writes/s, event-loop delay p99/max ms):`);
  const rows: string[] = [];
  for (let i = 1; i < r.samples.length; i++) {
    const a = r.samples[i - 1];
    const b = r.samples[i];
    const dt = b.t - a.t;
    if (dt < 0.5) continue;
    const cpu = a.cpu !== undefined && b.cpu !== undefined ? `${Math.round(((b.cpu - a.cpu) / dt) * 100)}%` : '?';
    const lag = b.lagP99 !== undefined && b.lagMax !== undefined ? `${(b.lagP99 * 1000).toFixed(0)}/${(b.lagMax * 1000).toFixed(0)}` : '?';
    rows.push(`${b.t.toFixed(0)}: ${mb(b.rss).toFixed(0)} (${b.heap !== undefined ? mb(b.heap).toFixed(0) : '?'}), ${cpu}, ${((b.searches - a.searches) / dt).toFixed(0)}, ${((b.writes - a.writes) / dt).toFixed(0)}, ${lag}`);
  }
  for (let i = 0; i < rows.length; i += 5) console.log(`    ${rows.slice(i, i + 5).join(' | ')}`);
  const lags = r.samples.slice(1).flatMap((x) => (x.lagP99 !== undefined ? [x.lagP99 * 1000] : [])).sort((a, b) => a - b);
  const worst = Math.max(...r.samples.flatMap((x) => (x.lagMax !== undefined ? [x.lagMax * 1000] : [])));
  if (lags.length) console.log(`  main thread's event-loop delay: p99 per 5 s median ${pct(lags, 0.5).toFixed(0)} ms, worst ${lags[lags.length - 1].toFixed(0)} ms; longest ${worst.toFixed(0)} ms`);
}

async function mixedLoad(server: Server, seeded: Seeded, docs: CranfieldDoc[], queries: string[], o: Options): Promise<void> {
  const s: Session = { url: server.url, key: seeded.key };
  const pacing = o.searchIntervalMs > 0 ? `each starting a search every ${o.searchIntervalMs} ms at most` : 'back to back';
  // Warm the connection pool and the query path once.
  await must(s, 'POST', `/v1/workspaces/${seeded.corpus}/search`, { query: queries[0], limit: 5 });

  // Searches alone first, back to back: the server's search capacity and its CPU cost per search.
  const aloneSeconds = Math.min(20, Math.max(5, Math.round(o.seconds / 6)));
  const alone = await runLoad(server, seeded, docs, queries, { seconds: aloneSeconds, writers: false, uploads: false, searchIntervalMs: 0, firstUpload: 1_000_000 });
  const aloneCpu = serverCpuSeconds(alone);
  console.log(`  searches alone (${aloneSeconds} s, ${SEARCH_CLIENTS} clients back to back): ${describeSearches(alone)}`);
  if (aloneCpu !== undefined) console.log(`    server CPU ${((aloneCpu / Math.max(1, alone.searchMs.length)) * 1000).toFixed(2)} ms per search; load average ${alone.loadAtEnd}`);

  const r = await runLoad(server, seeded, docs, queries, { seconds: o.seconds, writers: true, uploads: true, searchIntervalMs: o.searchIntervalMs, firstUpload: seeded.reports });
  // Nothing accepted is lost: every upload reaches VERIFIED.
  const drain0 = performance.now();
  await settled(s, seeded.corpus, 10 * 60_000);
  const drainS = (performance.now() - drain0) / 1000;
  const verified = await countByStatus(s, seeded.corpus, 'VERIFIED');

  const sorted = [...r.searchMs].sort((a, b) => a - b);
  const wsorted = [...r.writeMs].sort((a, b) => a - b);
  console.log(
    `  mixed (${r.elapsed.toFixed(0)} s): ${SEARCH_CLIENTS} search clients ${pacing}, ${WRITERS} writers (tag renames, back to back), one upload every ${UPLOAD_EVERY_MS} ms; load average at the end ${r.loadAtEnd}`,
  );
  printTimeline(r);
  console.log(`  ${describeSearches(r)}`);
  console.log(`  writes: ${r.writes} = ${(r.writes / r.elapsed).toFixed(1)}/s, p50 ${pct(wsorted, 0.5).toFixed(1)} ms, p99 ${pct(wsorted, 0.99).toFixed(1)} ms`);
  console.log(
    `  uploads: ${r.uploaded.length} accepted${r.uploadsSkipped ? `, ${r.uploadsSkipped} not sent (${MAX_UPLOADS_IN_FLIGHT} already in flight)` : ''}; all VERIFIED ${drainS.toFixed(1)} s after the load stopped ` +
      `(${verified} VERIFIED documents in the workspace, ${seeded.reports + r.uploaded.length} expected)`,
  );
  const cpu = serverCpuSeconds(r);
  if (cpu !== undefined) console.log(`  server CPU over the run: ${((cpu / r.elapsed) * 100).toFixed(0)}% of one core`);
  for (const [kind, log] of Object.entries(r.errors)) if (log.count) console.log(`  ${kind} errors: ${log.count}, e.g. ${log.samples.join(' / ')}`);
  // RSS growth after warm-up: the lowest RSS of the last half of the samples after the warm-up
  // (the first minute, or the first third of a shorter run) minus the lowest of the first half.
  // The lowest, because the old generation is collected lazily: RSS climbs by 100–150 MB over a
  // minute or more and falls back at each major GC (the main heap's live size, from
  // --trace-gc, stays ~70 MB), so single samples, or even medians, measure where the saw-tooth
  // happens to be; a leak raises the troughs. (A half with no major GC in it overstates growth.)
  const warmupS = Math.min(60, o.seconds / 3);
  const after = r.samples.filter((x) => x.t >= warmupS);
  const half = Math.floor(after.length / 2);
  const early = Math.min(...after.slice(0, half).map((x) => x.rss));
  const late = Math.min(...after.slice(half).map((x) => x.rss));
  const end = r.samples[r.samples.length - 1];
  console.log(
    `  RSS: start ${mb(r.samples[0].rss).toFixed(0)} MB, end ${mb(end.rss).toFixed(0)} MB, peak ${mb(Math.max(...r.samples.map((x) => x.rss))).toFixed(0)} MB; ` +
      `after the warm-up (${warmupS.toFixed(0)} s) lowest ${mb(early).toFixed(0)} MB in the first half, ${mb(late).toFixed(0)} MB in the second`,
  );

  const lost = seeded.reports + r.uploaded.length - verified;
  const errors = r.errors.search.count + r.errors.write.count + r.errors.upload.count + Math.max(0, lost);
  figure(BENCH, 'search p50 under mixed load', pct(sorted, 0.5), 'ms', { kind: 'max', value: 50 });
  figure(BENCH, 'search p99 under mixed load', pct(sorted, 0.99), 'ms', { kind: 'max', value: 250 });
  figure(BENCH, 'writes under mixed load', r.writes / r.elapsed, '/s', { kind: 'min', value: 150 });
  figure(BENCH, 'errors under mixed load (incl. uploads not VERIFIED)', errors, '', { kind: 'max', value: 0 });
  figure(BENCH, 'RSS growth after warm-up (lowest, 2nd half − 1st half)', mb(late - early), 'MB', { kind: 'max', value: RSS_GROWTH_TARGET_MB });
}

function copyDir(from: string, to: string): void {
  fs.cpSync(from, to, { recursive: true });
}

export async function benchMixed(options: Partial<Options> = {}): Promise<void> {
  const o: Options = { seconds: options.seconds ?? 180, chunks: options.chunks ?? 15_000, keep: options.keep, searchIntervalMs: options.searchIntervalMs ?? DEFAULT_SEARCH_INTERVAL_MS };
  const { docs, queries } = loadCranfield();
  console.log(`mixed load: Cranfield reports (${ABSTRACTS_PER_REPORT} abstracts each), ~${o.chunks} chunks, ${o.seconds} s; load average ${load()}`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-bench-mixed-'));
  try {
    let seeded: Seeded;
    let seedDir: string;
    if (o.keep && fs.existsSync(path.join(o.keep, SEED_FILE))) {
      seeded = JSON.parse(fs.readFileSync(path.join(o.keep, SEED_FILE), 'utf8')) as Seeded;
      seedDir = path.join(o.keep, 'data');
      console.log(`  reusing the seeded data dir in ${o.keep} (${seeded.reports} reports, ${seeded.chunks} chunks)`);
    } else {
      seedDir = o.keep ? path.join(o.keep, 'data') : path.join(work, 'seed');
      fs.rmSync(seedDir, { recursive: true, force: true });
      fs.mkdirSync(seedDir, { recursive: true });
      seeded = await seed(seedDir, docs, o.chunks);
      if (o.keep) fs.writeFileSync(path.join(o.keep, SEED_FILE), JSON.stringify(seeded));
    }
    // The measured run works on a copy: the kept seed stays as it was.
    const runDir = path.join(work, 'run');
    copyDir(seedDir, runDir);
    const server = await startServer(runDir);
    try {
      console.log(`  server started on the seeded data (RSS ${mb(rssOf(server.pid)).toFixed(0)} MB); load average ${load()}`);
      await mixedLoad(server, seeded, docs, queries, o);
    } finally {
      await server.stop();
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

export function mixedOptions(args: string[]): Partial<Options> {
  const arg = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  return {
    ...(arg('--seconds') ? { seconds: Number(arg('--seconds')) } : {}),
    ...(arg('--chunks') ? { chunks: Number(arg('--chunks')) } : {}),
    ...(arg('--keep') ? { keep: path.resolve(arg('--keep')!) } : {}),
    ...(arg('--search-interval') ? { searchIntervalMs: Number(arg('--search-interval')) } : {}),
  };
}

if (require.main === module) {
  benchMixed(mixedOptions(process.argv.slice(2))).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
