import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { Duplex } from 'node:stream';
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
/** The longest message the module's process may send (its result, as JSON text, is one): past it the run fails. */
export const MAX_MESSAGE_BYTES = 256 * 1024 * 1024;
/** How much of the module's output (stdout and stderr) is passed on to ours; the rest is dropped, with a note. */
export const MAX_OUTPUT_BYTES = 1024 * 1024;

type ChildMessage = { kind: 'ready' } | { kind: 'ack'; count: number } | { kind: 'result'; json: string } | { kind: 'error'; message: string };

const inside = (child: string, parent: string): boolean => {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

/*
 * The sandbox host takes the network away from the module in its own process; where the host
 * allows it, the process also starts in a network namespace of its own (unshare --net, with a
 * user namespace so no privilege is needed): no interface but a loopback that is down, so no
 * route anywhere, even for a way out the host missed; the user inside is the caller's own
 * (USER_MAPPINGS). unshare execs node in place (same pid, exit status and signals) and passes
 * the IPC descriptor and the stdio pipes through: a namespace does not close sockets already open. Unix sockets with a path in the file system
 * are reachable from any namespace: those are left to the guard. Unprivileged user namespaces
 * may be turned off (kernel.unprivileged_userns_clone, AppArmor, a container's seccomp
 * profile), so unshare is tried once per process and the guard runs alone where it fails.
 */
let isolator: NetworkIsolator | null | undefined;
/** The unshare to run the module under, and its arguments (before `--`). */
export interface NetworkIsolator {
  unshare: string;
  args: string[];
}
/**
 * The user inside the namespace is the caller's own (`--map-current-user`, util-linux 2.38 and
 * later): a process that is not root outside keeps no capability inside. Mapped to root
 * (`--map-root-user`, the fallback for an older unshare) it would hold every capability in its
 * namespaces, its network namespace included (nothing to reach from there, but no reason to).
 */
const USER_MAPPINGS = ['--map-current-user', '--map-root-user'];
export function networkIsolator(): NetworkIsolator | null {
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
    for (const mapping of USER_MAPPINGS) {
      const args = ['--net', mapping];
      const probe = spawnSync(unshare, [...args, 'true'], { stdio: 'ignore', env: {}, timeout: 5000 });
      if (probe.status === 0) {
        isolator = { unshare, args };
        break;
      }
    }
    break;
  }
  return isolator;
}

/**
 * Node's permission model follows symbolic links (a documented limitation): a link in the
 * module's folder to the data dir, a key file or /proc made them readable to the module (checked).
 * A folder holding a link that leads out of it is refused, and one holding a hard link to a
 * file of the data dir. (Links made after this check, by another process, are not seen: the
 * module itself can write nothing.)
 */
const MAX_FOLDER_ENTRIES = 200_000;
/** The files (device and inode) under the protected paths, for hard links: a hard link is the file itself. */
function protectedInodes(protectedPaths: string[]): Set<string> {
  const inodes = new Set<string>();
  let seen = 0;
  const walk = (p: string) => {
    if (++seen > MAX_FOLDER_ENTRIES) throw new Error(`more than ${MAX_FOLDER_ENTRIES} entries under ${protectedPaths.join(', ')}: cannot check the module's folder for hard links`);
    let st: fs.BigIntStats;
    try {
      st = fs.lstatSync(p, { bigint: true });
    } catch {
      return;
    }
    if (st.isDirectory()) for (const name of fs.readdirSync(p)) walk(path.join(p, name));
    else if (st.isFile()) inodes.add(`${st.dev}:${st.ino}`);
  };
  for (const p of protectedPaths) walk(p);
  return inodes;
}

function refuseLinksOut(folder: string, protectedPaths: string[]): void {
  let seen = 0;
  let inodes: Set<string> | null = null;
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (++seen > MAX_FOLDER_ENTRIES) throw new Error(`the module's folder ${folder} holds more than ${MAX_FOLDER_ENTRIES} entries: put the module in a folder of its own`);
      const full = path.join(dir, entry.name);
      if (entry.isSymbolicLink()) {
        let target: string | null = null;
        try {
          target = fs.realpathSync(full);
        } catch {
          // a dangling link: where it leads may appear later
        }
        if (target === null || !inside(target, folder))
          throw new Error(`the module's folder holds a symbolic link that leads out of it (${full}), which would let the module read what it leads to: put the module in a folder of its own`);
      } else if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) {
        // A hard link to a file of the data dir (a key file, say) reads as that file.
        const st = fs.lstatSync(full, { bigint: true });
        if (st.nlink > 1n && (inodes ??= protectedInodes(protectedPaths)).has(`${st.dev}:${st.ino}`))
          throw new Error(`the module's folder holds a hard link to a file of the data dir (${full}): put the module in a folder of its own`);
      }
    }
  };
  walk(folder);
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
    // A folder inside the data dir (its outbox, say, of mail with sign-in links) is no better.
    if (inside(path.dirname(real), prot))
      throw new Error(`the module's folder ${path.dirname(real)} is inside ${prot}, which it would be allowed to read in part: put the module in a folder of its own`);
  }
  if (!real.endsWith('.ts')) refuseLinksOut(path.dirname(real), options.protectedPaths);
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
  const isolated = options.networkNamespace === false ? null : networkIsolator();
  const [command, ...args] = isolated ? [isolated.unshare, ...isolated.args, '--', ...node] : node;
  // Descriptor 3 is a plain socket pair, not node's IPC channel ('ipc'): node's own handling of
  // that channel in this process trusts the other end (an internal message, a handle, bytes that
  // are not JSON threw here, uncaught; a line with no end was buffered without bound).
  const child = spawn(command, args, { cwd: path.dirname(prepared.module), env: {}, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
  const link = child.stdio[3] as Duplex;
  // Whatever the module prints goes to our stderr, never into the result; up to a bound.
  let printed = 0;
  const pass = (d: Buffer) => {
    if (printed >= MAX_OUTPUT_BYTES) return;
    const room = MAX_OUTPUT_BYTES - printed;
    printed += d.length;
    process.stderr.write(d.length <= room ? d : d.subarray(0, room));
    if (printed >= MAX_OUTPUT_BYTES) process.stderr.write(`\n[the projection printed more than ${MAX_OUTPUT_BYTES} bytes: the rest is dropped]\n`);
  };
  child.stdout?.on('data', pass);
  child.stderr?.on('data', pass);
  const channel = messages(child, link, maxMemoryMb);
  const request = (message: unknown, expect: ChildMessage['kind']) => ask(child, link, channel, message, expect, stepTimeoutMs);
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

/** A message from the module's process, or null if it is not one of the four kinds, well formed. */
function checked(m: unknown): ChildMessage | null {
  if (!m || typeof m !== 'object' || Array.isArray(m)) return null;
  const r = m as Record<string, unknown>;
  switch (r.kind) {
    case 'ready':
      return { kind: 'ready' };
    case 'ack':
      return typeof r.count === 'number' ? { kind: 'ack', count: r.count } : null;
    case 'result':
      return typeof r.json === 'string' ? { kind: 'result', json: r.json } : null;
    case 'error':
      return typeof r.message === 'string' ? { kind: 'error', message: r.message } : null;
    default:
      return null;
  }
}

/*
 * The module's process answers each request once, after it: a line (one JSON message) longer
 * than MAX_MESSAGE_BYTES, one that does not parse or is not of a known kind, or one that
 * nobody asked for ends the run (the process is killed), without reading further.
 */
function messages(child: ChildProcess, link: Duplex, maxMemoryMb: number): Channel {
  let waiting: { resolve: (m: ChildMessage) => void; reject: (e: Error) => void } | null = null;
  let ended: Error | null = null;
  const end = (err: Error) => {
    if (ended) return;
    ended = err;
    if (waiting) waiting.reject(err);
    waiting = null;
  };
  const violation = (what: string) => {
    end(new Error(`projection: ${what} (the run is stopped)`));
    link.destroy();
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  link.on('data', (chunk: Buffer) => {
    let start = 0;
    while (!ended) {
      const nl = chunk.indexOf(10, start);
      const piece = nl === -1 ? chunk.subarray(start) : chunk.subarray(start, nl);
      pendingBytes += piece.length;
      if (pendingBytes > MAX_MESSAGE_BYTES) return violation(`a message longer than ${MAX_MESSAGE_BYTES} bytes`);
      if (nl === -1) {
        if (piece.length) pending.push(piece);
        return;
      }
      pending.push(piece);
      const line = Buffer.concat(pending).toString('utf8');
      pending = [];
      pendingBytes = 0;
      start = nl + 1;
      let m: ChildMessage | null = null;
      try {
        m = checked(JSON.parse(line));
      } catch {
        // not JSON
      }
      if (!m) return violation('a message that is not one of the protocol');
      if (!waiting) return violation(`a message nobody asked for (${m.kind})`);
      const w = waiting;
      waiting = null;
      w.resolve(m);
    }
  });
  link.on('error', () => {
    // The process's end ('exit') says more.
  });
  child.on('error', (err) => end(err));
  // 'close', not 'exit': the last message may still be on its way when the process has exited.
  child.on('close', (code, signal) => {
    // V8 aborts (SIGABRT, 134) when the heap bound is reached.
    const oom = signal === 'SIGABRT' || code === 134;
    end(new Error(oom ? `the projection ran out of memory (its bound is ${maxMemoryMb} MB)` : `the projection's process ended (${signal ?? `exit code ${code}`})`));
  });
  return {
    next: () => {
      if (ended) return Promise.reject(ended);
      return new Promise((resolve, reject) => (waiting = { resolve, reject }));
    },
  };
}

async function ask(child: ChildProcess, link: Duplex, channel: Channel, message: unknown, expect: ChildMessage['kind'], timeoutMs: number): Promise<ChildMessage> {
  const answer = channel.next(); // waiting before the request leaves: an answer is never early
  link.write(`${JSON.stringify(message)}\n`, () => {
    // a write that fails (the process gone) shows as its end
  });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`projection: no answer within ${timeoutMs / 1000} s to ${expect === 'ack' ? 'a batch of events' : expect === 'ready' ? 'loading the module' : 'result()'} (a loop that does not end?); raise --step-timeout if the work is real`));
    }, timeoutMs);
  });
  const reply = await Promise.race([answer, late]).finally(() => clearTimeout(timer));
  if (reply.kind === 'error') throw new Error(`projection: ${reply.message}`);
  if (reply.kind !== expect) throw new Error(`projection: expected ${expect}, got ${reply.kind}`);
  return reply;
}
