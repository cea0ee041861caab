import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EventStore } from '../ports/eventStore';
import { publicEvent } from '../audit/export';
import { workspaceOf } from '../audit/summary';

export interface ProjectOptions {
  /** The analyst's module: .js, .cjs, .mjs, or a single-file .ts (transpiled first). */
  file: string;
  workspaceId?: string;
  /** ISO time: only events that occurred at or before it. */
  asOf?: string;
  /** Folders the module must not be able to read (the data dir): refused if the module's folder holds one. */
  protectedPaths: string[];
  /** Heap bound of the module's process (MB, default 2048): past it the run fails, the machine keeps its memory. */
  maxMemoryMb?: number;
  /** How long the module may take over one step (loading, one batch of 1,000 events, the result), ms (default 120,000): past it the run fails. */
  stepTimeoutMs?: number;
  /**
   * Start the module's process in a network namespace of its own when the host allows it
   * (default true); false leaves the in-process guard (sandboxHost.ts) alone to refuse the network.
   */
  networkNamespace?: boolean;
  onProgress?: (position: number, head: number, matched: number) => void;
}

export interface ProjectResult {
  /** The module's result(state), as JSON text. */
  json: string;
  scanned: number;
  matched: number;
  seconds: number;
}

const BATCH = 1000;
export const DEFAULT_MAX_MEMORY_MB = 2048;
export const DEFAULT_STEP_TIMEOUT_MS = 120_000;
const HOST = path.join(__dirname, 'sandboxHost.js');

type ChildMessage = { kind: 'ready' } | { kind: 'ack'; count: number } | { kind: 'result'; json: string } | { kind: 'error'; message: string };

const inside = (child: string, parent: string): boolean => {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

/*
 * The sandbox host takes the network away from the module in its own process; where the host
 * allows it, the process also starts in a network namespace of its own (unshare --net, with a
 * user namespace so no privilege is needed): no interface but a loopback that is down, so no
 * route anywhere, even for a way out the host missed. unshare execs node in place (same pid,
 * exit status and signals) and passes the IPC descriptor and the stdio pipes through: a
 * namespace does not close sockets already open. Unix sockets with a path in the file system
 * are reachable from any namespace: those are left to the guard. Unprivileged user namespaces
 * may be turned off (kernel.unprivileged_userns_clone, AppArmor, a container's seccomp
 * profile), so unshare is tried once per process and the guard runs alone where it fails.
 */
let isolator: string | null | undefined;
function networkIsolator(): string | null {
  if (isolator !== undefined) return isolator;
  isolator = null;
  if (process.platform !== 'linux') return isolator;
  // Absolute PATH entries only: an empty or relative one would run an unshare from the current folder.
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter((d) => path.isAbsolute(d))) {
    const unshare = path.join(dir, 'unshare');
    try {
      fs.accessSync(unshare, fs.constants.X_OK);
    } catch {
      continue;
    }
    const probe = spawnSync(unshare, ['--net', '--map-root-user', 'true'], { stdio: 'ignore', env: {}, timeout: 5000 });
    if (probe.status === 0) isolator = unshare;
    break;
  }
  return isolator;
}

/** Transpile a one-file TypeScript projection into a private temp folder; returns the file to load. */
async function prepare(file: string): Promise<{ module: string; readable: string[]; cleanup: () => void }> {
  if (!file.endsWith('.ts')) return { module: file, readable: [file, `${path.dirname(file)}${path.sep}*`], cleanup: () => {} };
  const ts = await import('typescript');
  const out = ts.transpileModule(fs.readFileSync(file, 'utf8'), {
    fileName: file,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-project-'));
  const module = path.join(dir, `${path.basename(file, '.ts')}.cjs`);
  fs.writeFileSync(module, out.outputText, { mode: 0o600 });
  return { module, readable: [module], cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Run an analyst's projection over the log, in a sandboxed child process: Node's permission
 * model lets it read only its own module (and folder), write nothing, start no process or
 * worker; the host refuses it the network (and a namespace without one, where the host
 * allows it); its environment is empty. It receives events only, read through the store given
 * (the decrypting one: erased documents' text is empty) and redacted like the export.
 */
export async function runProjection(store: EventStore, options: ProjectOptions): Promise<ProjectResult> {
  const file = path.resolve(options.file);
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) throw new Error(`no such module: ${options.file}`);
  const real = fs.realpathSync(file);
  for (const p of options.protectedPaths) {
    const prot = fs.existsSync(p) ? fs.realpathSync(p) : path.resolve(p);
    if (inside(prot, path.dirname(real)))
      throw new Error(`the module's folder ${path.dirname(real)} contains ${prot}, which it would be allowed to read: put the module in a folder of its own`);
  }
  let asOf: string | null = null;
  if (options.asOf !== undefined) {
    const t = Date.parse(options.asOf);
    if (Number.isNaN(t)) throw new Error(`--as-of must be an ISO time, not ${options.asOf}`);
    asOf = new Date(t).toISOString();
  }
  const maxMemoryMb = options.maxMemoryMb ?? DEFAULT_MAX_MEMORY_MB;
  const stepTimeoutMs = options.stepTimeoutMs ?? DEFAULT_STEP_TIMEOUT_MS;
  if (!Number.isInteger(maxMemoryMb) || maxMemoryMb < 16) throw new Error(`the memory bound must be a whole number of MB, at least 16, not ${maxMemoryMb}`);
  if (!Number.isInteger(stepTimeoutMs) || stepTimeoutMs < 1) throw new Error(`the step time-out must be a whole number of ms, at least 1, not ${stepTimeoutMs}`);
  const prepared = await prepare(real);
  const node = [
    process.execPath,
    '--experimental-permission',
    '--no-warnings',
    `--max-old-space-size=${maxMemoryMb}`,
    `--allow-fs-read=${HOST}`,
    ...prepared.readable.map((p) => `--allow-fs-read=${p}`),
    HOST,
  ];
  const unshare = options.networkNamespace === false ? null : networkIsolator();
  const [command, ...args] = unshare ? [unshare, '--net', '--map-root-user', '--', ...node] : node;
  const child = spawn(command, args, { cwd: path.dirname(prepared.module), env: {}, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  // Whatever the module prints goes to our stderr, never into the result.
  child.stdout?.on('data', (d: Buffer) => process.stderr.write(d));
  child.stderr?.on('data', (d: Buffer) => process.stderr.write(d));
  const channel = messages(child, maxMemoryMb);
  const request = (message: unknown, expect: ChildMessage['kind']) => ask(child, channel, message, expect, stepTimeoutMs);
  const started = process.hrtime.bigint();
  try {
    await request({ kind: 'load', module: prepared.module }, 'ready');
    const head = await store.headPosition();
    let position = 0;
    let scanned = 0;
    let matched = 0;
    let next = store.readAll(position, BATCH);
    for (;;) {
      const batch = await next;
      if (batch.length === 0) break;
      position = batch[batch.length - 1].position;
      const done = position >= head;
      next = done ? Promise.resolve([]) : store.readAll(position, BATCH);
      const events = [];
      for (const e of batch) {
        scanned += 1;
        if (asOf !== null && e.metadata.occurredAt > asOf) continue;
        if (options.workspaceId && workspaceOf(e) !== options.workspaceId) continue;
        events.push(publicEvent(e));
      }
      matched += events.length;
      if (events.length) await request({ kind: 'batch', events }, 'ack');
      options.onProgress?.(position, head, matched);
      if (done) break;
    }
    const r = await request({ kind: 'end' }, 'result');
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return { json: r.kind === 'result' ? r.json : 'null', scanned, matched, seconds };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    prepared.cleanup();
  }
}

interface Channel {
  next(): Promise<ChildMessage>;
}

function messages(child: ChildProcess, maxMemoryMb: number): Channel {
  const queue: ChildMessage[] = [];
  let waiting: { resolve: (m: ChildMessage) => void; reject: (e: Error) => void } | null = null;
  let ended: Error | null = null;
  child.on('message', (m: ChildMessage) => {
    if (waiting) {
      const w = waiting;
      waiting = null;
      w.resolve(m);
    } else queue.push(m);
  });
  child.on('error', (err) => {
    ended = err;
    if (waiting) waiting.reject(err);
  });
  child.on('exit', (code, signal) => {
    // V8 aborts (SIGABRT, 134) when the heap bound is reached.
    const oom = signal === 'SIGABRT' || code === 134;
    ended = new Error(oom ? `the projection ran out of memory (its bound is ${maxMemoryMb} MB)` : `the projection's process ended (${signal ?? `exit code ${code}`})`);
    if (waiting) waiting.reject(ended);
  });
  return {
    next: () => {
      const m = queue.shift();
      if (m) return Promise.resolve(m);
      if (ended) return Promise.reject(ended);
      return new Promise((resolve, reject) => (waiting = { resolve, reject }));
    },
  };
}

async function ask(child: ChildProcess, channel: Channel, message: unknown, expect: ChildMessage['kind'], timeoutMs: number): Promise<ChildMessage> {
  child.send(message as object);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`projection: no answer within ${timeoutMs / 1000} s to ${expect === 'ack' ? 'a batch of events' : expect === 'ready' ? 'loading the module' : 'result()'} (a loop that does not end?); raise --step-timeout if the work is real`));
    }, timeoutMs);
  });
  const reply = await Promise.race([channel.next(), late]).finally(() => clearTimeout(timer));
  if (reply.kind === 'error') throw new Error(`projection: ${reply.message}`);
  if (reply.kind !== expect) throw new Error(`projection: expected ${expect}, got ${reply.kind}`);
  return reply;
}
