import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { client, signUp, startServer, TestServer } from '../support/server';

const run = promisify(execFile);
const root = path.resolve(__dirname, '..', '..');

/** Run the CLI on a data dir; resolves with the exit code instead of throwing. */
async function cli(dataDir: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [path.join(root, 'dist/src/cli.js'), ...args], {
      cwd: root,
      env: { ...process.env, KB_DATA_DIR: dataDir, KB_LOG_LEVEL: 'silent', KB_JWT_SECRET: 'test-secret-test-secret-test-secret' },
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('audit trail', () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUp>>;
  let admin: Awaited<ReturnType<typeof signUp>>;
  let member: Awaited<ReturnType<typeof signUp>>;
  let outsider: Awaited<ReturnType<typeof signUp>>;
  let ws: string;
  let other: string;
  let tagId: string;
  let linkToken: string;
  let apiKey: string;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    owner = await signUp(server.url, 'Owner');
    admin = await signUp(server.url, 'Admin');
    member = await signUp(server.url, 'Member');
    outsider = await signUp(server.url, 'Outsider');
    ws = (await owner.api.post('/v1/workspaces', { name: 'Audited' })).body.id;
    other = (await owner.api.post('/v1/workspaces', { name: 'Other' })).body.id;
    expect((await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: admin.id, role: 'ADMIN' })).status).toBe(201);
    expect((await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: member.id, role: 'MEMBER' })).status).toBe(201);
    const key = await admin.api.post('/v1/api-keys', { name: 'ci' });
    expect(key.status).toBe(201);
    apiKey = key.body.key;
    const byKey = client(server.url, apiKey);
    const tag = await byKey.post(`/v1/workspaces/${ws}/tags`, { name: 'legal', color: '#112233' });
    expect(tag.status).toBe(201);
    tagId = tag.body.id;
    expect((await owner.api.put(`/v1/workspaces/${ws}`, { name: 'Audited renamed' })).status).toBe(200);
    const link = await owner.api.post(`/api/workspaces/${ws}/public-links`, { name: 'public', allowedTags: [tagId] });
    expect(link.status).toBe(201);
    linkToken = link.body.token;
    expect((await owner.api.post(`/v1/workspaces/${other}/tags`, { name: 'elsewhere', color: '#445566' })).status).toBe(201);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('lists the workspace events newest first, with actor, method, subject and a summary', async () => {
    const r = await admin.api.get(`/v1/workspaces/${ws}/audit`);
    expect(r.status).toBe(200);
    const actions = r.body.data.map((e: { action: string }) => e.action);
    expect(actions).toEqual(['SearchLinkCreated', 'WorkspaceUpdated', 'TagCreated', 'MemberAdded', 'MemberAdded', 'WorkspaceCreated']);
    expect(r.body.nextCursor).toBeNull();
    const positions = r.body.data.map((e: { position: number }) => e.position);
    expect([...positions].sort((a, b) => b - a)).toEqual(positions);

    const tag = r.body.data.find((e: { action: string }) => e.action === 'TagCreated');
    expect(tag).toMatchObject({
      actor: { userId: admin.id, email: admin.email, authMethod: 'api_key' },
      subject: { type: 'tag', id: tagId },
      summary: { tagId, name: 'legal', color: '#112233' },
    });
    expect(Date.parse(tag.time)).not.toBeNaN();
    const renamed = r.body.data.find((e: { action: string }) => e.action === 'WorkspaceUpdated');
    expect(renamed).toMatchObject({ actor: { userId: owner.id, email: owner.email, authMethod: 'session' }, subject: { type: 'workspace', id: ws }, summary: { name: 'Audited renamed' } });
    const added = r.body.data.filter((e: { action: string }) => e.action === 'MemberAdded');
    expect(added.map((e: { subject: { type: string; id: string } }) => e.subject)).toEqual([
      { type: 'member', id: member.id },
      { type: 'member', id: admin.id },
    ]);
    expect(added[0].summary).toMatchObject({ userId: member.id, role: 'MEMBER' });
    const link = r.body.data[0];
    expect(link.subject.type).toBe('link');
    expect(link.summary).toMatchObject({ name: 'public', allowedTags: [tagId] });

    // Never a token, a token hash, a password hash or another workspace's events.
    const text = JSON.stringify(r.body);
    expect(text).not.toContain(linkToken);
    expect(text).not.toContain(linkToken.slice(0, 8));
    expect(text).not.toContain(apiKey);
    expect(text).not.toMatch(/hash|password/i);
    expect(text).not.toContain('elsewhere');
  });

  it('filters by action, actor, subject and time', async () => {
    const byAction = await owner.api.get(`/v1/workspaces/${ws}/audit?action=TagCreated,WorkspaceUpdated`);
    expect(byAction.body.data.map((e: { action: string }) => e.action)).toEqual(['WorkspaceUpdated', 'TagCreated']);
    const byActor = await owner.api.get(`/v1/workspaces/${ws}/audit?actor=${admin.id}`);
    expect(byActor.body.data.map((e: { action: string }) => e.action)).toEqual(['TagCreated']);
    const bySubject = await owner.api.get(`/v1/workspaces/${ws}/audit?subject=${member.id}`);
    expect(bySubject.body.data).toHaveLength(1);
    expect(bySubject.body.data[0]).toMatchObject({ action: 'MemberAdded', subject: { type: 'member', id: member.id } });

    const all = (await owner.api.get(`/v1/workspaces/${ws}/audit`)).body.data as { time: string; action: string }[];
    const tagTime = all.find((e) => e.action === 'TagCreated')!.time;
    const after = await owner.api.get(`/v1/workspaces/${ws}/audit?from=${encodeURIComponent(tagTime)}`);
    expect(after.body.data.every((e: { time: string }) => e.time >= tagTime)).toBe(true);
    expect(after.body.data.map((e: { action: string }) => e.action)).toContain('TagCreated');
    expect(after.body.data.map((e: { action: string }) => e.action)).not.toContain('WorkspaceCreated');
    const before = await owner.api.get(`/v1/workspaces/${ws}/audit?to=${encodeURIComponent(tagTime)}`);
    expect(before.body.data.map((e: { action: string }) => e.action)).not.toContain('SearchLinkCreated');
    expect(before.body.data.map((e: { action: string }) => e.action)).toContain('WorkspaceCreated');
    expect((await owner.api.get(`/v1/workspaces/${ws}/audit?from=yesterday`)).status).toBe(400);
  });

  it('pages with a cursor, without gaps or repeats', async () => {
    const all = (await owner.api.get(`/v1/workspaces/${ws}/audit`)).body.data.map((e: { id: string }) => e.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r: { status: number; body: { data: { id: string }[]; nextCursor: string | null } } = await owner.api.get(`/v1/workspaces/${ws}/audit?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      expect(r.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...r.body.data.map((e: { id: string }) => e.id));
      cursor = r.body.nextCursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(all);
    expect((await owner.api.get(`/v1/workspaces/${ws}/audit?limit=201`)).status).toBe(400);
    expect((await owner.api.get(`/v1/workspaces/${ws}/audit?limit=0`)).status).toBe(400);
    expect((await owner.api.get(`/v1/workspaces/${ws}/audit?cursor=nonsense`)).status).toBe(400);
  });

  it('is for ADMIN and OWNER only; members get 403, others 404', async () => {
    const m = await member.api.get(`/v1/workspaces/${ws}/audit`);
    expect(m.status).toBe(403);
    expect(m.body.error.code).toBe('FORBIDDEN');
    const o = await outsider.api.get(`/v1/workspaces/${ws}/audit`);
    expect(o.status).toBe(404);
    expect(o.body.error.code).toBe('WORKSPACE_NOT_FOUND');
    expect((await client(server.url).get(`/v1/workspaces/${ws}/audit`)).status).toBe(401);
    expect((await owner.api.get(`/api/v1/workspaces/${ws}/audit`)).status).toBe(200);
  });

  describe('on the command line (server stopped)', () => {
    beforeAll(async () => {
      await server.stop();
    });

    it('export writes the log as NDJSON, filtered by workspace and start, without credentials', async () => {
      const all = await cli(server.dataDir, ['export']);
      expect(all.code).toBe(0);
      const lines = all.stdout.trim().split('\n').map((l) => JSON.parse(l));
      expect(lines.length).toBeGreaterThan(10);
      expect(lines.map((l) => l.position)).toEqual(lines.map((_, i) => i + 1));
      expect(lines[0]).toMatchObject({ type: 'UserRegistered', revision: 0, metadata: { authMethod: expect.any(String), occurredAt: expect.any(String) } });
      expect(all.stdout).not.toMatch(/"\$2[aby]\$|scrypt|argon/);
      expect(lines[0].data.passwordHash).toBe('[redacted]');
      expect(all.stdout).not.toContain(linkToken);

      const out = path.join(server.dataDir, 'export.ndjson');
      const mine = await cli(server.dataDir, ['export', '--workspace', ws, '--out', out]);
      expect(mine.code).toBe(0);
      const wsLines = fs.readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      expect(wsLines.map((l) => l.type)).toEqual(['WorkspaceCreated', 'MemberAdded', 'MemberAdded', 'TagCreated', 'WorkspaceUpdated', 'SearchLinkCreated']);
      const from = wsLines[3].position;
      const later = await cli(server.dataDir, ['export', '--workspace', ws, '--from', String(from)]);
      expect(later.stdout.trim().split('\n').map((l) => JSON.parse(l).type)).toEqual(['TagCreated', 'WorkspaceUpdated', 'SearchLinkCreated']);
      const byTime = await cli(server.dataDir, ['export', '--workspace', ws, '--from', wsLines[4].metadata.occurredAt]);
      expect(byTime.stdout.trim().split('\n').map((l) => JSON.parse(l).type)).toEqual(expect.arrayContaining(['WorkspaceUpdated', 'SearchLinkCreated']));
      expect(byTime.stdout).not.toContain('"WorkspaceCreated"');
    });

    it('verify passes on an untouched log and names the first event edited behind its back', async () => {
      const ok = await cli(server.dataDir, ['verify']);
      expect(ok.code).toBe(0);
      const total = Number(/(\d+) events checked/.exec(ok.stdout)?.[1]);
      expect(total).toBeGreaterThan(10);

      const db = new Database(path.join(server.dataDir, 'events.db'));
      const row = db.prepare("SELECT position, id, data FROM events WHERE type = 'TagCreated' ORDER BY position LIMIT 1").get() as { position: number; id: string; data: string };
      db.prepare('UPDATE events SET data = ? WHERE position = ?').run(row.data.replace('legal', 'lega1'), row.position);
      db.close();

      const bad = await cli(server.dataDir, ['verify']);
      expect(bad.code).toBe(1);
      expect(bad.stdout).toContain(`position ${row.position}`);
      expect(bad.stdout).toContain(row.id);
      expect(bad.stdout).toContain('TagCreated');
      expect(Number(/(\d+) events checked/.exec(bad.stdout)?.[1])).toBe(row.position);
    });
  });
});
