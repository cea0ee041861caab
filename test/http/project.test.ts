import { spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { cli, root } from '../support/cli';
import { History, makeHistory } from './analyticsCli.support';
import { networkIsolator } from '../../src/analytics/projectRunner';

describe('npm run kb -- project (ad-hoc projections in a sandbox)', () => {
  let h: History;
  let scratch: string;
  beforeAll(async () => {
    h = await makeHistory();
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-proj-'));
  }, 120_000);

  const module = (name: string, source: string): string => {
    const dir = fs.mkdtempSync(path.join(scratch, 'm-'));
    const file = path.join(dir, name);
    fs.writeFileSync(file, source);
    return file;
  };

  it('runs the documents-per-week example as JSON, per workspace and as of a time', async () => {
    const all = await cli(h.dataDir, ['project', path.join(root, 'examples/documentsPerWeek.ts')]);
    expect(all.code).toBe(0);
    expect(all.stderr).toMatch(/projected \d+ of \d+ events in [\d.]+ s \(\d+ events\/s\)/);
    const rows = JSON.parse(all.stdout) as { workspaceId: string; uploaded: number; deleted: number }[];
    const sum = (ws: string, k: 'uploaded' | 'deleted') => rows.filter((r) => r.workspaceId === ws).reduce((s, r) => s + r[k], 0);
    expect([sum(h.wsA, 'uploaded'), sum(h.wsA, 'deleted'), sum(h.wsB, 'uploaded'), sum(h.wsB, 'deleted')]).toEqual([2, 1, 2, 0]);

    const onlyB = JSON.parse((await cli(h.dataDir, ['project', 'examples/documentsPerWeek.ts', '--workspace', h.wsB])).stdout) as { workspaceId: string }[];
    expect(onlyB.map((r) => r.workspaceId)).toEqual(onlyB.map(() => h.wsB));

    const early = JSON.parse((await cli(h.dataDir, ['project', 'examples/documentsPerWeek.ts', '--as-of', h.midpoint])).stdout) as { workspaceId: string; uploaded: number }[];
    expect(early).toEqual([expect.objectContaining({ workspaceId: h.wsA, uploaded: 1, deleted: 0 })]);
  });

  it('runs the failures-by-code example as CSV into a file', async () => {
    const out = path.join(scratch, 'failures.csv');
    const r = await cli(h.dataDir, ['project', 'examples/failuresByCode.ts', '--format', 'csv', '--out', out]);
    expect(r.code).toBe(0);
    const lines = fs.readFileSync(out, 'utf8').trim().split('\r\n');
    expect(lines[0]).toBe('code,failures,documents,lastAt');
    expect(lines.slice(1).map((l) => l.split(',').slice(0, 3).join(',')).sort()).toEqual(['ENCRYPTED,1,1', 'NO_TEXT,1,1']);
  });

  it("sees the kept document's text but never the erased one's", async () => {
    const file = module(
      'text.js',
      `exports.initialState = () => ({ texts: [], erased: 0 });
       exports.evolve = (s, e) => {
         if (e.type === 'DocumentTextExtracted') s.texts.push(...e.data.sections.map((x) => x.text));
         if (e.type === 'DocumentChunked') s.texts.push(...e.data.chunks.map((c) => c.content));
         if (e.data && e.data.erased) s.erased += 1;
         return s;
       };
       exports.result = (s) => s;`,
    );
    const r = await cli(h.dataDir, ['project', file]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { texts: string[]; erased: number };
    expect(out.texts.join(' ')).toContain('lighthouses');
    expect(r.stdout).not.toContain(h.secretWord);
    expect(out.erased).toBeGreaterThan(0);
  });

  it.each([
    ['reads the event log', (d: string) => `require('node:fs').readFileSync(${JSON.stringify(path.join(d, 'events.db'))})`],
    ['reads the link-token key file', (d: string) => `require('node:fs').readFileSync(${JSON.stringify(path.join(d, 'link-token.key'))})`],
    ['lists the data dir', (d: string) => `require('node:fs').readdirSync(${JSON.stringify(d)})`],
    ['writes a file', () => `require('node:fs').writeFileSync('/tmp/kb-sandbox-escape', 'x')`],
    ['starts a process', () => `require('node:child_process').execSync('cat /etc/hostname')`],
    ['reads a secret from its environment', () => `if (!process.env.KB_JWT_SECRET) throw new Error('ERR_ACCESS_DENIED: no env'); process.env.KB_JWT_SECRET`],
    // Signals are outside the permission model: before, these reached the CLI (any process of the user, the server too).
    ['signals another process', () => `process.kill(process.ppid, 0)`],
    ["opens another process's inspector (SIGUSR1), to drive it over 127.0.0.1:9229", () => `process._debugProcess(process.ppid)`],
    ['re-nices another process', () => `require('node:os').setPriority(process.ppid, 19)`],
    // --allow-natives-syntax would open V8 runtime functions that can corrupt memory, under the network guard.
    ['changes V8 flags', () => `require('node:v8').setFlagsFromString('--allow-natives-syntax')`],
  ])('fails when the module %s', async (_what, attack) => {
    const file = module('attack.js', `exports.initialState = 0; exports.evolve = (s) => s + 1; exports.result = (s) => { ${attack(h.dataDir)}; return s; };`);
    const r = await cli(h.dataDir, ['project', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/ERR_ACCESS_DENIED|Access to this API has been restricted/);
    expect(r.stdout).toBe('');
    expect(fs.existsSync('/tmp/kb-sandbox-escape')).toBe(false);
  });

  describe('the network', () => {
    // What the module could reach: a TCP server, a Unix socket and a UDP socket (which also
    // stands for a DNS server: a query whose name carries the events is a way out too).
    let tcp: net.Server;
    let unix: net.Server;
    let udp: dgram.Socket;
    let socketPath: string;
    const seen: string[] = [];
    beforeAll(async () => {
      tcp = net.createServer((c) => (seen.push('tcp'), c.destroy()));
      await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
      socketPath = path.join(scratch, 'service.sock');
      unix = net.createServer((c) => (seen.push('unix'), c.destroy()));
      await new Promise<void>((r) => unix.listen(socketPath, r));
      udp = dgram.createSocket('udp4').on('message', () => seen.push('udp'));
      await new Promise<void>((r) => udp.bind(0, '127.0.0.1', r));
    });
    afterAll(() => {
      tcp.close();
      unix.close();
      udp.close();
    });

    /** Runs an ES module whose loading makes the attempt (top-level await, two seconds at most). */
    const attempt = async (source: string, env: Record<string, string> = {}) => {
      seen.length = 0;
      const file = module(
        'attack.mjs',
        `const tcpPort = ${(tcp.address() as net.AddressInfo).port}, udpPort = ${udp.address().port}, socketPath = ${JSON.stringify(socketPath)};
         const within = (p) => Promise.race([p, new Promise((r) => setTimeout(r, 2000))]);
         const connected = (s) => new Promise((resolve, reject) => s.on('connect', resolve).on('error', reject));
         ${source}
         export const initialState = 0; export const evolve = (s) => s; export const result = (s) => s;`,
      );
      const r = await cli(h.dataDir, ['project', file], env);
      await new Promise((resolve) => setTimeout(resolve, 50)); // a datagram sent is in our queue by now
      return { ...r, seen: [...seen] };
    };
    // A fake request object: the native handles take any object with an internal field as one.
    const fakeReq = `const { Resolver: R } = await import('node:dns'); const fakeReq = () => Object.assign(new (new R()._handle.constructor)(1000, 1), { oncomplete() {} });`;

    // The in-process guard on its own (no network namespace): each of these reached the servers
    // or the resolver before it.
    it.each([
      ['net.connect', `const net = await import('node:net'); await within(connected(net.connect(tcpPort, '127.0.0.1')));`],
      ['net.createConnection (required as net)', `const { createConnection } = await import('net'); await within(connected(createConnection({ port: tcpPort, host: '127.0.0.1' })));`],
      ['new net.Socket().connect', `const { Socket } = await import('node:net'); await within(connected(new Socket().connect(tcpPort, '127.0.0.1')));`],
      ['a subclass of net.Socket', `const net = await import('node:net'); class S extends net.Socket {} await within(connected(new S().connect(tcpPort, '127.0.0.1')));`],
      ['a Unix socket', `const net = await import('node:net'); await within(connected(net.connect(socketPath)));`],
      ['net through module.createRequire', `const { createRequire } = await import('node:module'); const net = createRequire(import.meta.url)('net'); await within(connected(net.connect(tcpPort, '127.0.0.1')));`],
      ['net through process.mainModule', `const net = process.mainModule.require('node:net'); await within(connected(net.connect(tcpPort, '127.0.0.1')));`],
      ['net imported in a vm context', `const vm = await import('node:vm'); const net = await new vm.Script('import("node:net")', { importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER }).runInNewContext({}); await within(connected(net.connect(tcpPort, '127.0.0.1')));`],
      ['connect put back from tls.TLSSocket.prototype', `const net = await import('node:net'); const tls = await import('node:tls'); const c = Object.getPrototypeOf(tls.TLSSocket.prototype).connect; try { net.Socket.prototype.connect = c; } catch {} await within(connected(new net.Socket().connect(tcpPort, '127.0.0.1')));`],
      ['http.get', `const http = await import('node:http'); await within(new Promise((res, rej) => http.get({ host: '127.0.0.1', port: tcpPort }, res).on('error', rej)));`],
      ['tls.connect', `const tls = await import('node:tls'); await within(new Promise((res, rej) => tls.connect({ host: '127.0.0.1', port: tcpPort, rejectUnauthorized: false }, res).on('error', rej)));`],
      ['fetch', `await within(fetch('http://127.0.0.1:' + tcpPort + '/'));`],
      ['a TCP handle of its own (from a TLSSocket)', `${fakeReq} const tls = await import('node:tls'); const TCP = new tls.TLSSocket()._handle._parent.constructor; await within(new Promise((res, rej) => { const req = fakeReq(); req.oncomplete = res; const e = new TCP(0).connect(req, '127.0.0.1', tcpPort); if (e) rej(new Error('connect ' + e)); }));`],
      ['a Pipe handle of its own (from process.stdout)', `${fakeReq} const Pipe = process.stdout._handle.constructor; await within(new Promise((res, rej) => { const req = fakeReq(); req.oncomplete = res; const e = new Pipe(0).connect(req, socketPath); if (e) rej(new Error('connect ' + e)); }));`],
      ['net.createServer().listen', `const net = await import('node:net'); await within(new Promise((res, rej) => net.createServer().listen(0, '127.0.0.1', res).on('error', rej)));`],
      ['http.createServer().listen', `const http = await import('node:http'); await within(new Promise((res, rej) => http.createServer().listen(0, '127.0.0.1', res).on('error', rej)));`],
      ['dgram send', `const dgram = await import('node:dgram'); await within(new Promise((res, rej) => dgram.createSocket('udp4').send('x', udpPort, '127.0.0.1', (e) => (e ? rej(e) : res()))));`],
      ['dgram bind', `const dgram = await import('node:dgram'); await within(new Promise((res, rej) => dgram.createSocket('udp4').on('error', rej).bind(0, '127.0.0.1', res)));`],
      ['dgram connect', `const dgram = await import('node:dgram'); await within(new Promise((res, rej) => dgram.createSocket('udp4').on('error', rej).connect(udpPort, '127.0.0.1', res)));`],
      ['UDP recvStart on a handle of its own (it binds 0.0.0.0: datagrams from anyone)', `const dgram = await import('node:dgram'); const s = dgram.createSocket('udp4'); const udp = Object.getOwnPropertySymbols(s).map((k) => s[k]).find((v) => v && v.handle).handle; const e = udp.recvStart(); if (e < 0) throw new Error('recvStart ' + e); const a = {}; udp.getsockname(a); console.error('listening on UDP port ' + a.port);`],
      ['a UDP handle of its own', `${fakeReq} const dgram = await import('node:dgram'); const s = dgram.createSocket('udp4'); const udp = Object.getOwnPropertySymbols(s).map((k) => s[k]).find((v) => v && v.handle).handle; const e = udp.send(fakeReq(), [Buffer.from('x')], 1, udpPort, '127.0.0.1', false); if (e < 0) throw new Error('send ' + e); await within(new Promise(() => {}));`],
      ['dns.lookup', `const dns = await import('node:dns'); await within(new Promise((res, rej) => dns.lookup('localhost', (e) => (e ? rej(e) : res()))));`],
      ['dns/promises lookup', `const { lookup } = await import('node:dns/promises'); await within(lookup('localhost'));`],
      ['dns.lookupService', `const dns = await import('node:dns'); await within(new Promise((res, rej) => dns.lookupService('127.0.0.1', 22, (e) => (e ? rej(e) : res()))));`],
      ['dns.resolve4 (its servers set to ours, where allowed)', `const dns = (await import('node:dns')).default; try { dns.setServers(['127.0.0.1:' + udpPort]); } catch {} await within(new Promise((res) => dns.resolve4('events.example', res)));`],
      ['a dns.Resolver (resolveTxt, reverse)', `const { Resolver } = await import('node:dns'); const r = new Resolver({ timeout: 200, tries: 1 }); r.setServers(['127.0.0.1:' + udpPort]); await within(new Promise((res) => r.resolveTxt('events.example', res))); await within(new Promise((res) => r.reverse('10.1.2.3', res)));`],
      ['a dns/promises Resolver', `const { Resolver } = await import('node:dns/promises'); const r = new Resolver({ timeout: 200, tries: 1 }); r.setServers(['127.0.0.1:' + udpPort]); await within(r.resolveAny('events.example').catch((e) => { if (e.code !== 'ETIMEOUT') throw e; }));`],
      ['a c-ares handle of its own', `${fakeReq} const { Resolver } = await import('node:dns'); const r = new Resolver({ timeout: 200, tries: 1 }); r.setServers(['127.0.0.1:' + udpPort]); r._handle.queryA(fakeReq(), 'events.example', false); await within(new Promise(() => {}));`],
    ])('refuses %s', async (_what, source) => {
      const r = await attempt(source, { KB_PROJECT_NETNS: 'off' });
      expect(r.seen).toEqual([]);
      expect(r.stderr).toMatch(/network access is not allowed in the sandbox/);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
    });

    it('leaves the inspector, native addons and loader hooks to the permission model, which refuses them', async () => {
      // The inspector could read any closure (the guard's, node's own); an addon could do
      // anything; loader hooks run in a thread of their own, with builtins the guard never saw.
      const inspector = await attempt(`const inspector = await import('node:inspector'); new inspector.Session().connect();`, { KB_PROJECT_NETNS: 'off' });
      expect(inspector.stderr).toMatch(/Access to this API has been restricted/);
      const addon = path.join(root, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node');
      const dlopen = await attempt(`process.dlopen({ exports: {} }, ${JSON.stringify(addon)});`, { KB_PROJECT_NETNS: 'off' });
      expect(dlopen.stderr).toMatch(/loading addons is disabled/);
      const hooks = await attempt(
        `const { register } = await import('node:module'); register('data:text/javascript,' + encodeURIComponent("(await import('node:net')).connect(" + tcpPort + ", '127.0.0.1');"));`,
        { KB_PROJECT_NETNS: 'off' },
      );
      expect(hooks.stderr).toMatch(/Access to this API has been restricted/);
      expect([inspector.code, dlopen.code, hooks.code, hooks.seen]).toEqual([1, 1, 1, []]);
    });

    const unshare = spawnSync('unshare', ['--net', '--map-root-user', 'true']).status === 0;
    // A user that is not root, where this machine lets root become one (nobody, with su).
    const nobody = process.getuid?.() === 0 && spawnSync('su', ['nobody', '-s', '/bin/sh', '-c', `${process.execPath} -e 0`]).status === 0;
    (unshare && nobody ? it : it.skip)("runs the module as its caller's own user inside the namespace: one that is not root outside holds no capability there", () => {
      const isolated = networkIsolator();
      expect(isolated).not.toBeNull();
      const inside = (args: string[]) => {
        const script = "process.stdout.write(JSON.stringify({ uid: process.getuid(), caps: require('fs').readFileSync('/proc/self/status', 'utf8').match(/^CapEff:\\s*(\\w+)/m)[1] }))";
        const r = spawnSync('su', ['nobody', '-s', '/bin/sh', '-c', [isolated!.unshare, ...args, '--', process.execPath, '-e', JSON.stringify(script)].join(' ')], { encoding: 'utf8' });
        return JSON.parse(r.stdout) as { uid: number; caps: string };
      };
      expect(inside(isolated!.args)).toEqual({ uid: 65534, caps: '0000000000000000' });
      // What the namespace gave before (mapped to root): every capability in it.
      expect(inside(['--net', '--map-root-user'])).toMatchObject({ uid: 0 });
      expect(inside(['--net', '--map-root-user']).caps).not.toBe('0000000000000000');
    });
    (unshare ? it : it.skip)('starts the module in a network namespace of its own where the host allows it (no interface up), and it still prints', async () => {
      const r = await attempt(`const os = await import('node:os'); console.log('interfaces:', JSON.stringify(Object.keys(os.networkInterfaces())));`);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain('interfaces: []');
      const outside = await attempt(`const os = await import('node:os'); console.log('interfaces:', JSON.stringify(Object.keys(os.networkInterfaces())));`, { KB_PROJECT_NETNS: 'off' });
      expect(outside.stderr).not.toContain('interfaces: []');
      // The guard still answers first, with its message.
      const refused = await attempt(`const net = await import('node:net'); await within(connected(net.connect(tcpPort, '127.0.0.1')));`);
      expect(refused.stderr).toMatch(/network access is not allowed in the sandbox \(net\.Socket\.prototype\.connect\)/);
      expect([refused.code, refused.seen]).toEqual([1, []]);
    });
  });

  it('bounds time and memory: a loop that does not end and a memory blow-up fail the run with a clear error', async () => {
    const loop = await cli(h.dataDir, ['project', module('loop.js', 'exports.initialState = 0; exports.evolve = (s) => { for (;;) {} }; exports.result = (s) => s;'), '--step-timeout', '2']);
    expect(loop.code).toBe(1);
    expect(loop.stderr).toMatch(/no answer within 2 s to a batch of events \(a loop that does not end\?\)/);
    const hog = module('hog.js', 'exports.initialState = () => []; exports.evolve = (s) => { for (let i = 0; i < 50; i++) s.push(new Array(1e5).fill(Math.random())); return s; }; exports.result = (s) => s.length;');
    const mem = await cli(h.dataDir, ['project', hog, '--max-memory', '64']);
    expect(mem.code).toBe(1);
    expect(mem.stderr).toMatch(/ran out of memory \(its bound is 64 MB\)/);
    expect((await cli(h.dataDir, ['project', hog, '--max-memory', 'lots'])).stderr).toMatch(/memory bound must be a whole number of MB/);
  });

  it("keeps the CLI whole whatever the module writes on its link or prints", async () => {
    // Bytes that are not a message, on the link to the CLI (descriptor 3, opened as a stream: libuv's
    // tty takes any socket); over node's IPC channel this crashed the CLI with an uncaught error.
    const garbage = await cli(h.dataDir, ['project', module('garbage.mjs', "import tty from 'node:tty'; new tty.WriteStream(3).write('this is not json\\n'); await new Promise((r) => setTimeout(r, 1000)); export const initialState = 0; export const evolve = (s) => s; export const result = (s) => s;")]);
    expect(garbage.code).toBe(1);
    expect(garbage.stderr).toMatch(/a message that is not one of the protocol \(the run is stopped\)/);
    expect(garbage.stderr).not.toMatch(/ERR_INTERNAL_ASSERTION|SyntaxError|at .*node:internal/);
    // A message the CLI did not ask for (node's own internal one, over the old channel, crashed it).
    const unasked = await cli(h.dataDir, ['project', module('unasked.mjs', "import tty from 'node:tty'; new tty.WriteStream(3).write(JSON.stringify({ cmd: 'NODE_HANDLE_ACK' }) + '\\n' + JSON.stringify({ kind: 'ack', count: 1 }) + '\\n'); await new Promise((r) => setTimeout(r, 1000)); export const initialState = 0; export const evolve = (s) => s; export const result = (s) => s;")]);
    expect(unasked.code).toBe(1);
    expect(unasked.stderr).toMatch(/not one of the protocol|nobody asked for/);
    // What the module prints reaches the CLI's stderr up to 1 MiB, then a note.
    const loud = await cli(h.dataDir, ['project', module('loud.mjs', "const line = 'x'.repeat(1 << 16) + '\\n'; for (let i = 0; i < 64; i++) if (!process.stdout.write(line)) await new Promise((r) => process.stdout.once('drain', r)); export const initialState = 0; export const evolve = (s) => s + 1; export const result = (s) => s;")]);
    expect(loud.code).toBe(0);
    expect(loud.stderr.length).toBeLessThan(1.1 * 1024 * 1024);
    expect(loud.stderr).toMatch(/printed more than 1048576 bytes: the rest is dropped/);
    expect(JSON.parse(loud.stdout)).toBeGreaterThan(0);
  });

  it('refuses a module folder inside the data dir, or holding a link that leads out of it or to a file of the data dir', async () => {
    const exportsOnly = 'exports.initialState = 0; exports.evolve = (s) => s; exports.result = (s) => s;';
    const inside = path.join(h.dataDir, 'analyst');
    fs.mkdirSync(inside, { recursive: true });
    fs.writeFileSync(path.join(inside, 'p.js'), exportsOnly);
    const r1 = await cli(h.dataDir, ['project', path.join(inside, 'p.js')]);
    fs.rmSync(inside, { recursive: true, force: true });
    expect(r1.code).toBe(1);
    expect(r1.stderr).toMatch(/is inside .* put the module in a folder of its own/);

    const withSymlink = module('p.js', exportsOnly);
    fs.symlinkSync(h.dataDir, path.join(path.dirname(withSymlink), 'data'));
    const r2 = await cli(h.dataDir, ['project', withSymlink]);
    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(/holds a symbolic link that leads out of it/);

    const withHardLink = module('p.js', exportsOnly);
    fs.linkSync(path.join(h.dataDir, 'events.db'), path.join(path.dirname(withHardLink), 'log'));
    const r3 = await cli(h.dataDir, ['project', withHardLink]);
    expect(r3.code).toBe(1);
    expect(r3.stderr).toMatch(/holds a hard link to a file of the data dir/);

    // A link that stays inside the folder is fine.
    const withInnerLink = module('p.js', exportsOnly);
    fs.symlinkSync(withInnerLink, path.join(path.dirname(withInnerLink), 'same.js'));
    expect((await cli(h.dataDir, ['project', withInnerLink])).code).toBe(0);
  });

  it('refuses a module whose folder holds the data dir, and a module without the three exports', async () => {
    const nested = path.join(h.dataDir, '..', `${path.basename(h.dataDir)}-p.js`);
    fs.writeFileSync(nested, 'exports.initialState = 0; exports.evolve = (s) => s; exports.result = (s) => s;');
    const r = await cli(h.dataDir, ['project', nested]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/contains .* put the module in a folder of its own/);
    fs.rmSync(nested);

    const bad = await cli(h.dataDir, ['project', module('bad.js', 'exports.evolve = (s) => s;')]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/must export initialState/);
    const usage = await cli(h.dataDir, ['project', 'examples/failuresByCode.ts', '--format', 'xml']);
    expect(usage.code).toBe(2);
  });
});
