import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cli, root } from '../support/cli';
import { History, makeHistory } from './analyticsCli.support';

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
  ])('fails when the module %s', async (_what, attack) => {
    const file = module('attack.js', `exports.initialState = 0; exports.evolve = (s) => s + 1; exports.result = (s) => { ${attack(h.dataDir)}; return s; };`);
    const r = await cli(h.dataDir, ['project', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/ERR_ACCESS_DENIED|Access to this API has been restricted/);
    expect(r.stdout).toBe('');
    expect(fs.existsSync('/tmp/kb-sandbox-escape')).toBe(false);
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
