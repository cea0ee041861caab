/*
 * The child process an ad-hoc projection runs in (npm run kb -- project). It is started
 * by projectRunner.ts with Node's permission model: it may read only this file and the
 * analyst's module (and its folder); no writes, no child processes, no workers, and an
 * empty environment. It imports nothing of the service: the events arrive over descriptor 3
 * (a plain socket pair, not node's IPC channel: one JSON message a line, both ways) in batches,
 * already decrypted (erased text stays empty) and redacted.
 *
 * Protocol (parent → child): { kind: 'load', module } · { kind: 'batch', events } · { kind: 'end' }
 *          (child → parent): { kind: 'ready' } · { kind: 'ack', count } · { kind: 'result', json } · { kind: 'error', message }
 */

import dgram from 'node:dgram';
import dns from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import v8 from 'node:v8';

/*
 * The link to the parent: descriptor 3, opened here, before Pipe.prototype.open is refused below.
 * Not node's IPC channel ('ipc'): over it a module could send the parent internal messages
 * (NODE_HANDLE_ACK, NODE_HANDLE with a descriptor) or bytes that are not JSON, which throw in
 * the parent's own child_process code (the CLI crashed), or a line with no end, which the
 * parent piled up in memory. The parent reads this link with a bound and checks every message.
 */
const link = new net.Socket({ fd: 3, readable: true, writable: true });
const { stringify, parse } = JSON; // a module may replace JSON's methods later

/*
 * The permission model has no say over signals: a module could stop or kill any process of
 * the same user, and SIGUSR1 (process.kill or process._debugProcess) opens a Node process's
 * inspector on 127.0.0.1:9229, which the module could then drive over the network: the
 * service's own process, its keys and data dir included. Signals (and re-nicing other
 * processes) are taken away before the module loads; the bindings behind them are out of
 * reach (process.binding is refused under the model).
 */
const refuse = (name: string) => () => {
  throw Object.assign(new Error(`Access to this API has been restricted: ${name} (sandbox)`), { code: 'ERR_ACCESS_DENIED' });
};
for (const name of ['kill', '_kill', '_debugProcess', 'setuid', 'setgid', 'seteuid', 'setegid', 'setgroups', 'initgroups']) {
  Object.defineProperty(process, name, { value: refuse(`process.${name}`), writable: false, configurable: false, enumerable: false });
}
Object.defineProperty(os, 'setPriority', { value: refuse('os.setPriority'), writable: false, configurable: false });

/*
 * Nor does the permission model cover the network (Node 20): the module could send what it
 * receives elsewhere (over a connection, in a UDP packet, or in the name of a DNS query) or
 * talk to local services (TCP, Unix sockets). Every way to the network from node's public
 * modules ends in a method of one of four native handle classes: TCP and Pipe (net, tls, http,
 * https, http2, fetch/undici: all connect through net.Socket.prototype.connect), UDP (dgram) and
 * ChannelWrap (c-ares: dns.resolve*, dns.reverse, Resolver), or in getaddrinfo/getnameinfo
 * (dns.lookup, dns.lookupService), which only dns's own closures hold. The handles are within
 * the module's reach (new tls.TLSSocket()._handle._parent is a TCP, new dns.Resolver()._handle
 * a ChannelWrap, process.stdout._handle a Pipe) and their methods take any native object as
 * the request: tcp.connect(req, host, port) called directly connected, as did a UDP send and a
 * ChannelWrap query, past any guard on net.Socket (checked). So the methods that open, bind,
 * listen, connect, send or query are replaced on the native prototypes themselves, and the
 * public entry points as well, for a clear error at the call (and no DNS lookup before it).
 * All non-writable and non-configurable; no reference to an original is kept but Pipe's open,
 * inside a closure, for the standard streams. Whatever a module loads (node:net or net,
 * createRequire, import, a vm context's import, a library in its folder) reaches these same
 * objects: builtins exist once per process. The inspector (which could read closures), native
 * addons and loader hooks (module.register: a thread with builtins of its own) are already
 * refused by the permission model (checked).
 */
const { apply } = Reflect; // taken now: a module may replace Function.prototype.call and Reflect.apply later
const offline = (name: string) => () => {
  throw Object.assign(new Error(`network access is not allowed in the sandbox (${name})`), { code: 'ERR_ACCESS_DENIED' });
};
// Promise-returning APIs answer a rejected promise, as they do for any failure.
const offlineAsync = (name: string) => () => Promise.reject(Object.assign(new Error(`network access is not allowed in the sandbox (${name})`), { code: 'ERR_ACCESS_DENIED' }));
function lock(target: object, key: string, value: unknown): void {
  const enumerable = Object.getOwnPropertyDescriptor(target, key)?.enumerable ?? false;
  Object.defineProperty(target, key, { value, writable: false, configurable: false, enumerable });
}

// dns first: a dgram socket binds dns.lookup when it is made (the probe below makes one).
// setServers too: it re-binds the module's resolve* functions (locked; so it would fail
// with an obscure TypeError) and servers matter only to the queries refused here.
const DNS_QUERY = /^(lookup|lookupService|reverse|resolve\w*|setServers)$/;
for (const [target, label, refusal] of [
  [dns, 'dns', offline],
  [dns.promises, 'dns/promises', offlineAsync],
  [dns.Resolver.prototype, 'dns.Resolver.prototype', offline],
  [dns.promises.Resolver.prototype, 'dns/promises.Resolver.prototype', offlineAsync],
] as const) {
  for (const key of Object.getOwnPropertyNames(target)) {
    if (DNS_QUERY.test(key) && typeof (target as unknown as Record<string, unknown>)[key] === 'function') lock(target, key, refusal(`${label}.${key}`));
  }
}

/** The native handle a net.Socket makes in connect() before checking its arguments (no system call yet). */
function handleBeforeCheck(options: object): object {
  const socket = new net.Socket();
  try {
    socket.connect(options as net.SocketConnectOpts);
  } catch {
    // expected: the port (TCP) or path (Pipe) check fails right after the handle is made
  }
  const handle = (socket as unknown as { _handle: object | null })._handle;
  socket.destroy();
  if (!handle) throw new Error('sandbox: no native socket handle to take the network away from (node changed?)');
  return handle;
}
const udpSocket = dgram.createSocket('udp4');
const udpHandle = Object.getOwnPropertySymbols(udpSocket)
  .map((k) => (udpSocket as unknown as Record<symbol, { handle?: object } | undefined>)[k]?.handle)
  .find((h) => h !== undefined);
udpSocket.close();
const resolverHandle = (new dns.Resolver() as unknown as { _handle: object })._handle;
const pipeHandle = handleBeforeCheck({ path: 1 });
const pipeOpen = Object.getPrototypeOf(pipeHandle).open as (fd: number) => number;
for (const [handle, name, methods] of [
  [handleBeforeCheck({ port: -1 }), 'TCP', ['open', 'bind', 'bind6', 'listen', 'connect', 'connect6']],
  [pipeHandle, 'Pipe', ['bind', 'listen', 'connect', 'open']],
  // Joining a multicast group binds an unbound socket first and sends an IGMP report; so does
  // recvStart (libuv binds an unbound socket to 0.0.0.0 and an ephemeral port: datagrams from anyone).
  [udpHandle, 'UDP', ['open', 'bind', 'bind6', 'connect', 'connect6', 'send', 'send6', 'recvStart', 'addMembership', 'dropMembership', 'addSourceSpecificMembership', 'dropSourceSpecificMembership']],
  [resolverHandle, 'ChannelWrap', ['getHostByAddr', ...Object.getOwnPropertyNames(Object.getPrototypeOf(resolverHandle)).filter((m) => m.startsWith('query'))]],
] as const) {
  const proto = handle && Object.getPrototypeOf(handle);
  if (!proto || proto.constructor.name !== name) throw new Error(`sandbox: no ${name} handle to take the network away from (node changed?)`);
  for (const method of methods) {
    // A method missing means node renamed it, and the network would stay: refuse to run.
    if (typeof proto[method] !== 'function') throw new Error(`sandbox: ${name}.prototype.${method} not found (node changed?)`);
    lock(
      proto,
      method,
      name === 'Pipe' && method === 'open'
        ? // Node opens a Pipe on a standard stream when it is first used (process.stdout, console):
          // those descriptors only. Another one (inherited from the CLI's parent) could be a socket.
          function open(this: object, fd: unknown) {
            if (fd === 0 || fd === 1 || fd === 2) return apply(pipeOpen, this, [fd]);
            return offline('Pipe.prototype.open')();
          }
        : offline(`${name}.prototype.${method}`),
    );
  }
}

lock(net.Socket.prototype, 'connect', offline('net.Socket.prototype.connect'));
lock(net.Server.prototype, 'listen', offline('net.Server.prototype.listen'));
lock(net, '_createServerHandle', offline('net._createServerHandle'));
for (const method of ['bind', 'connect', 'send']) lock(dgram.Socket.prototype, method, offline(`dgram.Socket.prototype.${method}`));
lock(dgram, '_createSocketHandle', offline('dgram._createSocketHandle'));
for (const name of ['fetch', 'WebSocket', 'EventSource']) {
  if (name in globalThis) lock(globalThis, name, name === 'fetch' ? offlineAsync('fetch') : offline(name));
}
// V8 flags change the engine under these locks: --allow-natives-syntax opens runtime functions
// that can corrupt memory, --harmony-shadow-realm a realm of its own (unsupported by node 20).
lock(v8, 'setFlagsFromString', refuse('v8.setFlagsFromString'));
// `import { connect } from 'node:net'` reads a copy of the exports made when first imported.
syncBuiltinESMExports();

interface AnalystModule {
  initialState: unknown;
  evolve: (state: unknown, event: unknown) => unknown;
  result: (state: unknown) => unknown;
}

type ParentMessage = { kind: 'load'; module: string } | { kind: 'batch'; events: { position: number }[] } | { kind: 'end' };

// Kept as a real dynamic import (TypeScript would turn import() into require()), so ES modules load too.
const importModule = new Function('url', 'return import(url)') as (url: string) => Promise<Record<string, unknown>>;

let projection: AnalystModule | null = null;
let state: unknown;

function send(message: unknown): Promise<void> {
  return new Promise((resolve, reject) => link.write(`${stringify(message)}\n`, (err?: Error | null) => (err ? reject(err) : resolve())));
}

function fail(message: string): void {
  void send({ kind: 'error', message }).finally(() => process.exit(1));
}

/** Maps, Sets and bigints become JSON (objects, arrays and strings). */
function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Map) return Object.fromEntries(value);
  if (value instanceof Set) return [...value];
  if (typeof value === 'bigint') return value.toString();
  return value;
}

function pick(mod: Record<string, unknown>): AnalystModule {
  const candidates = [mod, mod.default as Record<string, unknown> | undefined].filter((m): m is Record<string, unknown> => !!m && typeof m === 'object');
  for (const m of candidates) {
    if (typeof m.evolve === 'function' && typeof m.result === 'function' && m.initialState !== undefined) return m as unknown as AnalystModule;
  }
  throw new Error('the module must export initialState (a value or a function returning one), evolve(state, event) and result(state)');
}

async function onMessage(message: ParentMessage): Promise<void> {
  switch (message.kind) {
    case 'load': {
      projection = pick(await importModule(pathToFileURL(message.module).href));
      state = typeof projection.initialState === 'function' ? (projection.initialState as () => unknown)() : structuredClone(projection.initialState);
      await send({ kind: 'ready' });
      return;
    }
    case 'batch': {
      const p = projection!;
      for (const event of message.events) {
        try {
          state = p.evolve(state, event);
        } catch (err) {
          throw new Error(`evolve failed at position ${event.position}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
        }
      }
      await send({ kind: 'ack', count: message.events.length });
      return;
    }
    case 'end': {
      const value = projection!.result(state);
      await send({ kind: 'result', json: stringify(value === undefined ? null : value, replacer) });
      process.exit(0);
    }
  }
}

// Messages (one a line) are handled one at a time, in order.
let queue = Promise.resolve();
let pending: Buffer[] = [];
link.on('data', (chunk: Buffer) => {
  let start = 0;
  for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
    pending.push(chunk.subarray(start, nl));
    const line = Buffer.concat(pending).toString('utf8');
    pending = [];
    start = nl + 1;
    queue = queue.then(() => onMessage(parse(line) as ParentMessage)).catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
  }
  if (start < chunk.length) pending.push(chunk.subarray(start));
});
// The parent gone (or the link closed): nothing more to do.
link.on('end', () => process.exit(0));
link.on('error', () => process.exit(0));
