/**
 * Crash torture: "nothing accepted is lost" and "read models and the search index are derived
 * from the log", checked against the real server under kill -9.
 *
 *   node dist/bench/crashTorture.js --rounds N [--seed S] [--clients 4] [--keep]
 *
 * Each round (seed = S + round, printed, replayable with --seed and --rounds 1):
 *  1. starts `node dist/src/main.js` on a fresh data dir, registers a user, makes a baseline of
 *     workspaces, tags and documents and waits for them to be VERIFIED;
 *  2. runs several concurrent clients doing a random mix of writes (workspaces, tags created /
 *     renamed / deleted, Markdown uploads and documents from text, metadata and tag updates,
 *     deletions, instruction sets created and renamed, search links), recording each write that
 *     got a 2xx answer, and kill -9s the server at a random moment (10–1500 ms, in one of several
 *     modes: uniform, right after a burst of writes, while uploads are being processed);
 *  3. restarts it on the same data dir, waits for /readyz, and checks that every acknowledged
 *     write is visible, that documents VERIFIED before the kill are still found by search, and that
 *     every accepted document reaches VERIFIED or FAILED within a bounded time;
 *  4. stops it, copies the data dir twice, runs `cli.js rebuild` on one copy, compares every rm_*
 *     table (id + doc) of read.db between the live copy and the rebuilt one, and search answers of
 *     servers started on each; runs `cli.js verify`.
 * Exit code 1 when any round found something.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { mulberry32 } from '../src/util/random';

const root = path.resolve(__dirname, '..', '..');
const JWT = 'torture-secret-torture-secret-torture-secret';

// ---------- args ----------
const argv = process.argv.slice(2);
const arg = (name: string, def: string): string => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : def;
};
const ROUNDS = Number(arg('rounds', '15'));
const SEED0 = Number(arg('seed', String(Date.now() % 1_000_000)));
const CLIENTS = Number(arg('clients', '4'));
const KEEP = argv.includes('--keep');
const MODE_ARG = arg('mode', '');
const CYCLES = Number(arg('cycles', '2'));
/** Overrides the random kill moment (ms into the storm): long storms push the search index's lazily stored checkpoint past LAZY_CHECKPOINT_EVENTS. */
const KILL_MS = arg('kill-ms', '');

// ---------- rng ----------
type Rng = () => number;
const pick = <T>(rng: Rng, xs: T[]): T => xs[Math.floor(rng() * xs.length)];
const int = (rng: Rng, lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
const word = (rng: Rng) => Array.from({ length: 9 }, () => String.fromCharCode(97 + Math.floor(rng() * 26))).join('');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------- server ----------
interface Server {
  url: string;
  proc: ChildProcess;
  output(): string;
  stop(): Promise<void>;
  crash(): Promise<void>;
}

async function startServer(dataDir: string): Promise<Server> {
  const proc = spawn(process.execPath, [path.join(root, 'dist/src/main.js')], {
    cwd: root,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      KB_DATA_DIR: dataDir,
      KB_ANNOUNCE_PORT: '1',
      KB_LOG_LEVEL: 'warn',
      KB_JWT_SECRET: JWT,
      KB_RATE_LIMITS: 'off',
      KB_WARMUP_REHEARSAL: 'off',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out.slice(-4000)}`)), 60_000);
    const onData = () => {
      const m = /KB_LISTENING (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    proc.stdout?.on('data', onData);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${out.slice(-4000)}`));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      const r = await fetch(`${url}/readyz`);
      if (r.status === 200) break;
    } catch {
      /* not yet */
    }
    if (i > 1200) throw new Error(`/readyz never 200:\n${out.slice(-4000)}`);
    await sleep(50);
  }
  return {
    url,
    proc,
    output: () => out,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
    crash: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

interface Res {
  status: number;
  body: any;
  text: string;
}
function api(base: string, token?: string) {
  const call = async (method: string, p: string, body?: unknown): Promise<Res> => {
    const res = await fetch(base + p, {
      method,
      headers: {
        ...(body !== undefined && !(body instanceof FormData) ? { 'content-type': 'application/json' } : {}),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed, text };
  };
  return {
    get: (p: string) => call('GET', p),
    post: (p: string, b?: unknown) => call('POST', p, b ?? {}),
    put: (p: string, b?: unknown) => call('PUT', p, b ?? {}),
    patch: (p: string, b?: unknown) => call('PATCH', p, b ?? {}),
    delete: (p: string) => call('DELETE', p),
  };
}
type Api = ReturnType<typeof api>;

// ---------- model of acknowledged state ----------
/** Called once when an upload is acknowledged ('processing' mode arms it). */
let onUploadAck: (() => void) | undefined;
/** A value known for sure, plus values an unanswered write may have set (any of them is fine). */
interface Known<T> {
  value: T;
  maybe: T[];
}
interface TagM {
  id: string;
  ws: string;
  name: Known<string>;
  deleted: Known<boolean>;
}
interface DocM {
  id: string;
  ws: string;
  words: string[];
  title: Known<string>;
  tags: Known<string[]>;
  deleted: Known<boolean>;
  verifiedBeforeKill: boolean;
}
interface SetM {
  id: string;
  ws: string;
  name: Known<string>;
}
interface LinkM {
  id: string;
  ws: string;
  name: string;
}
interface Model {
  workspaces: Map<string, { id: string; name: string }>;
  tags: Map<string, TagM>;
  docs: Map<string, DocM>;
  sets: Map<string, SetM>;
  links: Map<string, LinkM>;
  acked: number;
  unanswered: number;
  failed: Map<string, number>;
}
const known = <T>(value: T): Known<T> => ({ value, maybe: [] });
const ok = (s: number) => s >= 200 && s < 300;

/** One client's writes, on its own workspace (so its acknowledged order is the order applied). */
async function clientLoop(id: number, rng: Rng, a: Api, model: Model, ws: string, stop: () => boolean, mode: string, onAck: () => void): Promise<void> {
  const mine = <T extends { ws: string }>(xs: Iterable<T>): T[] => [...xs].filter((x) => x.ws === ws);
  const fail = (what: string, r: Res) => {
    const k = `${what} ${r.status} ${r.body?.error?.code ?? r.body?.code ?? ''}`.trim();
    model.failed.set(k, (model.failed.get(k) ?? 0) + 1);
  };
  /** A write whose answer may never come (the kill): record its possible effect first. */
  const attempt = async <T>(before: () => T, send: () => Promise<Res>, acked: (r: Res, t: T) => void, undo: (t: T) => void, what: string) => {
    const t = before();
    let r: Res;
    try {
      r = await send();
    } catch {
      model.unanswered++;
      return; // no answer: the possible effect stays possible
    }
    if (ok(r.status)) {
      model.acked++;
      acked(r, t);
      onAck();
    } else {
      fail(what, r);
      undo(t);
    }
  };
  const ops: [number, () => Promise<void>][] = [
    [mode === 'uploads' || mode === 'processing' ? 8 : 3, async () => {
      const words = [word(rng), word(rng), word(rng)];
      const title = `Doc ${words[0]}`;
      const tags = mine(model.tags.values()).filter((t) => !t.deleted.value && t.deleted.maybe.length === 0);
      const chosen = tags.length && rng() < 0.5 ? [pick(rng, tags).id] : [];
      const body = `# ${title}\n\nThe ${words[0]} meets the ${words[1]} near the ${words[2]}.\n\n${'Filler sentence about nothing in particular. '.repeat(int(rng, 1, 30))}\n`;
      const send = () => {
        if (rng() < 0.5) return a.post(`/v1/workspaces/${ws}/documents`, { title, content: body, format: 'markdown', ...(chosen.length ? { tags: chosen } : {}) });
        const fd = new FormData();
        fd.append('title', title);
        if (chosen.length) fd.append('tags', JSON.stringify(chosen));
        fd.append('file', new Blob([body]), `${words[0]}.md`);
        return a.post(`/v1/workspaces/${ws}/documents`, fd);
      };
      await attempt(
        () => null,
        send,
        (r) => {
          model.docs.set(r.body.id, { id: r.body.id, ws, words, title: known(title), tags: known(chosen), deleted: known(false), verifiedBeforeKill: false });
          onUploadAck?.();
        },
        () => undefined,
        'upload',
      );
    }],
    [3, async () => {
      const name = `t-${id}-${word(rng)}`;
      await attempt(() => null, () => a.post(`/v1/workspaces/${ws}/tags`, { name, color: '#123456' }), (r) => model.tags.set(r.body.id, { id: r.body.id, ws, name: known(name), deleted: known(false) }), () => undefined, 'tag create');
    }],
    [3, async () => {
      const tags = mine(model.tags.values()).filter((t) => !t.deleted.value);
      if (!tags.length) return;
      const t = pick(rng, tags);
      const name = `r-${id}-${word(rng)}`;
      await attempt(
        () => t.name.maybe.push(name),
        () => a.put(`/v1/workspaces/${ws}/tags/${t.id}`, { name }),
        () => (t.name = known(name)),
        () => t.name.maybe.pop(),
        'tag rename',
      );
    }],
    [1, async () => {
      const tags = mine(model.tags.values()).filter((t) => !t.deleted.value);
      if (!tags.length) return;
      const t = pick(rng, tags);
      await attempt(() => t.deleted.maybe.push(true), () => a.delete(`/v1/workspaces/${ws}/tags/${t.id}`), () => (t.deleted = known(true)), () => t.deleted.maybe.pop(), 'tag delete');
    }],
    [3, async () => {
      const docs = mine(model.docs.values()).filter((d) => !d.deleted.value);
      if (!docs.length) return;
      const d = pick(rng, docs);
      const title = `Retitled ${d.words[0]} ${word(rng)}`;
      const tags = mine(model.tags.values()).filter((t) => !t.deleted.value && t.deleted.maybe.length === 0);
      const chosen = tags.length && rng() < 0.6 ? [pick(rng, tags).id] : [];
      await attempt(
        () => {
          d.title.maybe.push(title);
          d.tags.maybe.push(chosen);
        },
        () => a.put(`/v1/workspaces/${ws}/documents/${d.id}`, { title, tags: chosen }),
        () => {
          d.title = known(title);
          d.tags = known(chosen);
        },
        () => {
          d.title.maybe.pop();
          d.tags.maybe.pop();
        },
        'doc metadata',
      );
    }],
    [1, async () => {
      const docs = mine(model.docs.values()).filter((d) => !d.deleted.value);
      if (!docs.length) return;
      const d = pick(rng, docs);
      await attempt(() => d.deleted.maybe.push(true), () => a.delete(`/v1/workspaces/${ws}/documents/${d.id}`), () => (d.deleted = known(true)), () => d.deleted.maybe.pop(), 'doc delete');
    }],
    [2, async () => {
      const name = `set-${word(rng)}`;
      await attempt(() => null, () => a.post(`/api/workspaces/${ws}/instruction-sets`, { name }), (r) => model.sets.set(r.body.id, { id: r.body.id, ws, name: known(name) }), () => undefined, 'set create');
    }],
    [1, async () => {
      const sets = mine(model.sets.values());
      if (!sets.length) return;
      const s = pick(rng, sets);
      const name = `set-${word(rng)}`;
      await attempt(() => s.name.maybe.push(name), () => a.patch(`/api/instruction-sets/${s.id}`, { name }), () => (s.name = known(name)), () => s.name.maybe.pop(), 'set rename');
    }],
    [1, async () => {
      const name = `link-${word(rng)}`;
      await attempt(() => null, () => a.post(`/api/workspaces/${ws}/public-links`, { name }), (r) => model.links.set(r.body.id, { id: r.body.id, ws, name }), () => undefined, 'link create');
    }],
    [1, async () => {
      const name = `ws-${word(rng)}`;
      await attempt(() => null, () => a.post('/v1/workspaces', { name }), (r) => model.workspaces.set(r.body.id, { id: r.body.id, name }), () => undefined, 'workspace create');
    }],
  ];
  const total = ops.reduce((s, [w]) => s + w, 0);
  while (!stop()) {
    let x = rng() * total;
    const op = ops.find(([w]) => (x -= w) < 0)![1];
    await op();
  }
}

async function waitSettled(a: Api, ws: string, id: string, ms: number): Promise<string> {
  const end = Date.now() + ms;
  let status = '?';
  while (Date.now() < end) {
    const r = await a.get(`/v1/workspaces/${ws}/documents/${id}`);
    if (r.status === 404) return 'GONE';
    status = r.body?.processingStatus;
    if (status === 'VERIFIED' || status === 'FAILED') return status;
    await sleep(100);
  }
  return `STUCK(${status})`;
}

const inKnown = <T>(k: Known<T>, v: T) => [k.value, ...k.maybe].some((x) => JSON.stringify(x) === JSON.stringify(v));

// ---------- comparisons ----------
function readModelRows(dbFile: string): Map<string, Map<string, string>> {
  const db = new Database(dbFile, { readonly: true });
  const out = new Map<string, Map<string, string>>();
  for (const { name } of db.prepare("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'rm\\_%' ESCAPE '\\'").all() as { name: string }[]) {
    const rows = new Map<string, string>();
    for (const r of db.prepare(`SELECT id, doc FROM "${name}"`).all() as { id: string; doc: string }[]) rows.set(r.id, r.doc);
    out.set(name, rows);
  }
  const cps = db.prepare('SELECT projection, position FROM checkpoints').all();
  db.close();
  out.set('(checkpoints)', new Map((cps as { projection: string; position: number }[]).map((c) => [c.projection, String(c.position)])));
  return out;
}

function diffRows(live: Map<string, Map<string, string>>, rebuilt: Map<string, Map<string, string>>): string[] {
  const diffs: string[] = [];
  for (const table of new Set([...live.keys(), ...rebuilt.keys()])) {
    if (table === '(checkpoints)') continue;
    const a = live.get(table) ?? new Map();
    const b = rebuilt.get(table) ?? new Map();
    for (const id of new Set([...a.keys(), ...b.keys()])) {
      const x = a.get(id);
      const y = b.get(id);
      if (x === y) continue;
      if (x !== undefined && y !== undefined && JSON.stringify(JSON.parse(x)) === JSON.stringify(JSON.parse(y))) continue;
      diffs.push(`${table} ${id}: live=${x?.slice(0, 300) ?? '(none)'} rebuilt=${y?.slice(0, 300) ?? '(none)'}`);
    }
  }
  return diffs;
}

function copyDir(from: string, to: string) {
  fs.cpSync(from, to, { recursive: true, filter: (src) => !path.relative(from, src).startsWith(`tmp${path.sep}`) });
}

function cli(dataDir: string, ...args: string[]): string {
  return execFileSync(process.execPath, [path.join(root, 'dist/src/cli.js'), ...args], {
    cwd: root,
    env: { ...process.env, KB_DATA_DIR: dataDir, KB_LOG_LEVEL: 'silent', KB_JWT_SECRET: JWT },
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  }).toString();
}

async function searchAnswers(dataDir: string, token: string, queries: { ws: string; q: string }[]): Promise<string[]> {
  const s = await startServer(dataDir);
  try {
    return await askAll(s.url, token, queries);
  } finally {
    await s.stop();
  }
}

async function askAll(url: string, token: string, queries: { ws: string; q: string }[]): Promise<string[]> {
  {
    const a = api(url, token);
    const out: string[] = [];
    for (const { ws, q } of queries) {
      const r = await a.post(`/v1/workspaces/${ws}/search`, { query: q, limit: 20 });
      out.push(
        JSON.stringify({
          q,
          status: r.status,
          results: (r.body?.results ?? []).map((x: any) => ({ d: x.documentId, t: x.documentTitle, c: x.chunkIndex, s: Math.round(x.score * 1e4) / 1e4, m: x.metadata })),
        }),
      );
    }
    return out;
  }
}

// ---------- a round ----------
async function round(n: number, seed: number): Promise<string[]> {
  const rng = mulberry32(Math.imul(seed, 2654435761) ^ 0x5bd1e995);
  const findings: string[] = [];
  const modes = ['uniform', 'burst', 'uploads', 'early', 'processing'];
  const mode = MODE_ARG || pick(rng, modes);
  const killAt1 = KILL_MS ? Number(KILL_MS) : mode === 'early' ? int(rng, 10, 120) : int(rng, 10, 1500);
  const base = fs.mkdtempSync(path.join(os.tmpdir(), `kb-torture-${seed}-`));
  const dataDir = path.join(base, 'data');
  fs.mkdirSync(dataDir);
  const t0 = Date.now();
  let server = await startServer(dataDir);
  const anon = api(server.url);
  const email = `torture${seed}@example.com`;
  const reg = await anon.post('/v1/auth/register', { email, password: 'correct horse battery', name: 'Torture' });
  if (reg.status !== 201) throw new Error(`register: ${reg.status} ${reg.text}`);
  const login = await anon.post('/v1/auth/login', { email, password: 'correct horse battery' });
  const token = login.body.accessToken as string;
  let a = api(server.url, token);
  const model: Model = { workspaces: new Map(), tags: new Map(), docs: new Map(), sets: new Map(), links: new Map(), acked: 0, unanswered: 0, failed: new Map() };

  // Baseline: one workspace per client, a few tags and documents, VERIFIED before the storm.
  const clientWs: string[] = [];
  for (let c = 0; c < CLIENTS; c++) {
    const w = await a.post('/v1/workspaces', { name: `client-${c}` });
    model.workspaces.set(w.body.id, { id: w.body.id, name: `client-${c}` });
    clientWs.push(w.body.id);
    for (let i = 0; i < 2; i++) {
      const name = `base-${c}-${word(rng)}`;
      const t = await a.post(`/v1/workspaces/${w.body.id}/tags`, { name, color: '#654321' });
      model.tags.set(t.body.id, { id: t.body.id, ws: w.body.id, name: known(name), deleted: known(false) });
    }
    for (let i = 0; i < 2; i++) {
      const words = [word(rng), word(rng), word(rng)];
      const tagIds = [...model.tags.values()].filter((t) => t.ws === w.body.id).map((t) => t.id).slice(0, i + 1);
      const title = `Base ${words[0]}`;
      const d = await a.post(`/v1/workspaces/${w.body.id}/documents`, { title, content: `# ${title}\n\nThe ${words[0]} meets the ${words[1]} near the ${words[2]}.\n`, format: 'markdown', tags: tagIds });
      if (d.status !== 201) throw new Error(`baseline upload ${d.status} ${d.text}`);
      model.docs.set(d.body.id, { id: d.body.id, ws: w.body.id, words, title: known(title), tags: known(tagIds), deleted: known(false), verifiedBeforeKill: false });
    }
  }
  for (const d of model.docs.values()) {
    const s = await waitSettled(a, d.ws, d.id, 30_000);
    if (s === 'VERIFIED') d.verifiedBeforeKill = true;
    else findings.push(`baseline document ${d.id} ended ${s}`);
  }

  const kills: string[] = [];
  let acksInStorm = 0;
  const settled = new Map<string, string>();
  for (let cycle = 1; cycle <= CYCLES; cycle++) {
  const killAt = cycle === 1 ? killAt1 : KILL_MS ? Number(KILL_MS) : mode === 'early' ? int(rng, 10, 120) : int(rng, 10, 1500);
  const stormStart = Date.now();
  for (const d of model.docs.values()) if (settled.get(d.id) === 'VERIFIED') d.verifiedBeforeKill = true;
  // The storm, and the kill.
  let stopped = false;
  let killTimer: NodeJS.Timeout | undefined;
  let killedAt = 0;
  const killed = new Promise<void>((resolve) => {
    const doKill = () => {
      if (killedAt) return;
      killedAt = Date.now();
      stopped = true;
      server.proc.kill('SIGKILL');
      resolve();
    };
    if (mode === 'burst') {
      // A burst of concurrent writes; kill right after the last acknowledged one, or at killAt.
      killTimer = setTimeout(doKill, killAt);
      (async () => {
        const before = acksInStorm;
        const burst = Array.from({ length: 30 }, (_, i) => a.post(`/v1/workspaces/${clientWs[i % CLIENTS]}/tags`, { name: `burst-${i}-${word(rng)}`, color: '#111111' }).then((r) => ({ r, name: '' })));
        const names: string[] = [];
        void names;
        const answers = await Promise.allSettled(burst);
        answers.forEach((x, i) => {
          if (x.status === 'fulfilled' && ok(x.value.r.status)) {
            model.acked++;
            acksInStorm++;
            const body = x.value.r.body;
            model.tags.set(body.id, { id: body.id, ws: clientWs[i % CLIENTS], name: known(body.name), deleted: known(false) });
          }
        });
        if (acksInStorm > before) doKill();
      })().catch(() => undefined);
    } else if (mode === 'processing') {
      // While an acknowledged upload is being extracted, chunked, embedded or indexed: a few
      // milliseconds after the first upload's answer (killAt as a fallback).
      killTimer = setTimeout(doKill, killAt);
      const after = int(rng, 1, 150);
      onUploadAck = () => {
        onUploadAck = undefined;
        setTimeout(doKill, after);
      };
    } else {
      killTimer = setTimeout(doKill, killAt);
    }
  });
  const loops = clientWs.map((ws, c) => clientLoop(c, mulberry32(seed * 31 + c + cycle * 7919), a, model, ws, () => stopped, mode, () => acksInStorm++));
  await killed;
  onUploadAck = undefined;
  kills.push(`${killedAt - stormStart}`);
  clearTimeout(killTimer);
  await Promise.allSettled(loops);
  await new Promise<void>((r) => (server.proc.exitCode !== null || server.proc.signalCode !== null ? r() : server.proc.on('exit', () => r())));
  const stormMs = killedAt - t0;
  void stormMs;

  // Restart and check.
  server = await startServer(dataDir);
  a = api(server.url, token);
  const wsList = await a.get('/v1/workspaces');
  const wsIds = new Set((wsList.body?.data ?? wsList.body ?? []).map((w: { id: string }) => w.id));
  for (const w of model.workspaces.values()) if (!wsIds.has(w.id)) findings.push(`workspace ${w.id} (${w.name}) acknowledged, missing after restart`);
  const tagsByWs = new Map<string, Map<string, string>>();
  for (const ws of clientWs) {
    const r = await a.get(`/v1/workspaces/${ws}/tags`);
    tagsByWs.set(ws, new Map((r.body?.data ?? []).map((t: { id: string; name: string }) => [t.id, t.name])));
  }
  for (const t of model.tags.values()) {
    const live = tagsByWs.get(t.ws)!.get(t.id);
    const deletedNow = live === undefined;
    if (!inKnown(t.deleted, deletedNow)) findings.push(`tag ${t.id}: ${deletedNow ? 'missing' : 'present'} after restart, acknowledged deleted=${t.deleted.value}`);
    else if (!deletedNow && !inKnown(t.name, live)) findings.push(`tag ${t.id}: name "${live}" after restart, acknowledged "${t.name.value}" (maybe ${JSON.stringify(t.name.maybe)})`);
  }
  const deletedTags = new Set([...model.tags.values()].filter((t) => !tagsByWs.get(t.ws)!.has(t.id)).map((t) => t.id));
  for (const d of model.docs.values()) {
    const r = await a.get(`/v1/workspaces/${d.ws}/documents/${d.id}`);
    const gone = r.status === 404;
    if (r.status !== 200 && r.status !== 404) findings.push(`document ${d.id}: GET ${r.status} ${r.text.slice(0, 200)}`);
    if (!inKnown(d.deleted, gone)) {
      findings.push(`document ${d.id}: ${gone ? 'missing' : 'present'} after restart, acknowledged deleted=${d.deleted.value}`);
      continue;
    }
    if (gone) continue;
    if (!inKnown(d.title, r.body.title)) findings.push(`document ${d.id}: title "${r.body.title}", acknowledged "${d.title.value}" (maybe ${JSON.stringify(d.title.maybe)})`);
    const liveTags = [...(r.body.tags ?? [])].map((t: string | { id: string }) => (typeof t === 'string' ? t : t.id)).sort();
    const ok2 = [d.tags.value, ...d.tags.maybe].some((ts) => JSON.stringify(ts.filter((x) => !deletedTags.has(x)).sort()) === JSON.stringify(liveTags));
    if (!ok2) findings.push(`document ${d.id}: tags ${JSON.stringify(liveTags)}, acknowledged ${JSON.stringify(d.tags.value)} (maybe ${JSON.stringify(d.tags.maybe)})`);
  }
  for (const s of model.sets.values()) {
    const r = await a.get(`/api/instruction-sets/${s.id}`);
    if (r.status !== 200) findings.push(`instruction set ${s.id}: GET ${r.status} after restart`);
    else if (!inKnown(s.name, r.body.name)) findings.push(`instruction set ${s.id}: name "${r.body.name}", acknowledged "${s.name.value}"`);
  }
  for (const l of model.links.values()) {
    const r = await a.get(`/api/workspaces/${l.ws}/public-links/${l.id}`);
    if (r.status !== 200) findings.push(`search link ${l.id}: GET ${r.status} after restart`);
  }
  // (b) VERIFIED before the kill: still found; accepted: settle.
  for (const d of model.docs.values()) {
    if (d.deleted.value) continue;
    const s = await waitSettled(a, d.ws, d.id, 60_000);
    settled.set(d.id, s);
    if (s.startsWith('STUCK')) findings.push(`document ${d.id} accepted, ${s} 60 s after restart`);
  }
  for (const d of model.docs.values()) {
    if (d.deleted.value || d.deleted.maybe.length) continue;
    const s = settled.get(d.id);
    if (!(d.verifiedBeforeKill || s === 'VERIFIED')) continue;
    const r = await a.post(`/v1/workspaces/${d.ws}/search`, { query: `${d.words[1]} ${d.words[2]}`, limit: 20 });
    if (!(r.body?.results ?? []).some((x: { documentId: string }) => x.documentId === d.id))
      findings.push(`document ${d.id} (${d.verifiedBeforeKill ? 'VERIFIED before the kill' : 'VERIFIED after restart'}, now ${s}) not found by search for its words`);
  }
  for (const d of model.docs.values()) {
    if (!d.deleted.value) continue;
    const r = await a.post(`/v1/workspaces/${d.ws}/search`, { query: `${d.words[1]} ${d.words[2]}`, limit: 20 });
    if ((r.body?.results ?? []).some((x: { documentId: string }) => x.documentId === d.id)) findings.push(`document ${d.id} deleted (acknowledged) but still found by search`);
  }
  }
  const queries: { ws: string; q: string }[] = [];
  for (const d of [...model.docs.values()].slice(0, 12)) queries.push({ ws: d.ws, q: `${d.words[0]} ${d.words[1]}` });
  for (const ws of clientWs) queries.push({ ws, q: 'filler sentence about nothing' });
  // The index as the crash and restart left it (everything settled above), before a graceful stop rewrites anything.
  const afterCrashAns = await askAll(server.url, token, queries);
  await server.stop();

  // (c) live versus rebuilt.
  const liveCopy = path.join(base, 'live');
  const rebuiltCopy = path.join(base, 'rebuilt');
  copyDir(dataDir, liveCopy);
  // A graceful stop may leave the projections a few events behind the log (an event appended
  // while stopping, e.g. a search's): let the live copy catch up (start, /readyz, stop), no requests.
  await (await startServer(liveCopy)).stop();
  copyDir(liveCopy, rebuiltCopy);
  const rebuildOut = cli(rebuiltCopy, 'rebuild');
  if (!/events applied/.test(rebuildOut)) findings.push(`rebuild said: ${rebuildOut.slice(-500)}`);
  const diffs = diffRows(readModelRows(path.join(liveCopy, 'read.db')), readModelRows(path.join(rebuiltCopy, 'read.db')));
  for (const d of diffs.slice(0, 20)) findings.push(`read model differs from rebuild: ${d}`);
  if (diffs.length > 20) findings.push(`... and ${diffs.length - 20} more read-model differences`);
  const liveAns = await searchAnswers(liveCopy, token, queries);
  const rebuiltAns = await searchAnswers(rebuiltCopy, token, queries);
  liveAns.forEach((x, i) => {
    if (x !== rebuiltAns[i]) findings.push(`search differs from rebuild: live ${x.slice(0, 600)} rebuilt ${rebuiltAns[i].slice(0, 600)}`);
    if (afterCrashAns[i] !== rebuiltAns[i]) findings.push(`search right after the crash and restart differs from rebuild: live ${afterCrashAns[i].slice(0, 600)} rebuilt ${rebuiltAns[i].slice(0, 600)}`);
  });
  try {
    const v = cli(liveCopy, 'verify');
    if (!/intact|ok/i.test(v)) findings.push(`verify: ${v.slice(-300)}`);
  } catch (e) {
    findings.push(`verify failed: ${String((e as { stdout?: Buffer }).stdout ?? e).slice(-500)}`);
  }
  const statuses = [...settled.values()].reduce<Record<string, number>>((m, s) => ((m[s] = (m[s] ?? 0) + 1), m), {});
  console.log(
    `round ${n} seed ${seed} mode ${mode} kills at ${kills.join(',')} ms (${acksInStorm} acks in storm, ${model.unanswered} unanswered) docs ${model.docs.size} ${JSON.stringify(statuses)} tags ${model.tags.size} sets ${model.sets.size} links ${model.links.size} rejected ${JSON.stringify(Object.fromEntries(model.failed))} rm-rows ${[...readModelRows(path.join(liveCopy, 'read.db')).values()].reduce((s, m) => s + m.size, 0)} — ${findings.length ? `${findings.length} FINDINGS` : 'ok'} (${((Date.now() - t0) / 1000).toFixed(1)} s)`,
  );
  for (const f of findings) console.log(`  FINDING [seed ${seed}] ${f}`);
  if (!KEEP && findings.length === 0) fs.rmSync(base, { recursive: true, force: true });
  else console.log(`  data kept in ${base}`);
  return findings;
}

async function main() {
  let total = 0;
  for (let n = 1; n <= ROUNDS; n++) {
    try {
      total += (await round(n, SEED0 + n - 1)).length;
    } catch (e) {
      total++;
      console.log(`round ${n} seed ${SEED0 + n - 1}: ERROR ${(e as Error).stack ?? e}`);
    }
  }
  console.log(`${ROUNDS} rounds, ${total} findings`);
  process.exit(total ? 1 : 0);
}

void main();
