import fs from 'node:fs';
import path from 'node:path';
import { client, signUp, startServer, TestServer } from '../support/server';
import { uploadVerified } from '../support/documents';


const upload = uploadVerified;

const BASE = 'https://kb.example.com';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('search link management /api/workspaces/:workspaceId/public-links', () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUp>>;
  let admin: Awaited<ReturnType<typeof signUp>>;
  let member: Awaited<ReturnType<typeof signUp>>;
  let ws: string;
  let billing: string;
  let hr: string;
  const links = (w = ws) => `/api/workspaces/${w}/public-links`;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_BASE_URL: BASE });
    owner = await signUp(server.url, 'Owner');
    admin = await signUp(server.url, 'Admin');
    member = await signUp(server.url, 'Member');
    ws = (await owner.api.post('/v1/workspaces', { name: 'Links' })).body.id;
    await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: admin.id, role: 'ADMIN' });
    await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: member.id, role: 'MEMBER' });
    billing = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'Billing', color: '#112233' })).body.id;
    hr = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'HR', color: '#445566' })).body.id;
    await upload(owner.api, ws, 'a.txt', 'Invoices are sent on the first of the month.', [billing]);
    await upload(owner.api, ws, 'b.txt', 'Refunds take five business days.', [billing, hr]);
    await upload(owner.api, ws, 'c.txt', 'The office closes at six.');
  });
  afterAll(async () => server?.stop());

  it('creates a link: 201 with every field, the token shown once', async () => {
    const expiresAt = new Date(Date.now() + 3600_000).toISOString();
    const r = await owner.api.post(links(), { name: 'Billing bot', allowedTags: [billing], expiresAt });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(UUID),
      token: expect.stringMatching(/^[0-9a-f]{64}$/),
      tokenPrefix: r.body.token.slice(0, 8),
      name: 'Billing bot',
      allowedTags: [billing],
      expiresAt,
      historyMode: false,
      isActive: true,
      isExpired: false,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      publicUrl: `${BASE}/public/${r.body.token}/search`,
      documentCount: 2,
    });
    expect(Number.isNaN(Date.parse(r.body.createdAt))).toBe(false);
  });

  it('defaults: no name, the whole workspace in scope, no expiry, history off', async () => {
    const r = await admin.api.post(links(), {});
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ name: '', allowedTags: [], expiresAt: null, historyMode: false, isActive: true, documentCount: 3 });
    const two = await admin.api.post(links(), {});
    expect(two.body.token).not.toBe(r.body.token);
  });

  it('lists and gets links (ADMIN) with their token and publicUrl, so the URL can be copied again', async () => {
    const created = (await owner.api.post(links(), { name: 'Listed', allowedTags: [hr] })).body;
    const list = await owner.api.get(links());
    expect(list.status).toBe(200);
    const item = list.body.data.find((l: { id: string }) => l.id === created.id);
    expect(item).toEqual({
      id: created.id,
      token: created.token,
      tokenPrefix: created.token.slice(0, 8),
      name: 'Listed',
      allowedTags: [hr],
      expiresAt: null,
      historyMode: false,
      isActive: true,
      isExpired: false,
      createdAt: created.createdAt,
      updatedAt: created.updatedAt,
      publicUrl: `${BASE}/public/${created.token}/search`,
      documentCount: 1,
    });
    // Every link in the list carries its own token and URL.
    for (const l of list.body.data) expect(l.publicUrl).toBe(`${BASE}/public/${l.token}/search`);
    // The URL from the list works.
    expect((await client(server.url).get(`${new URL(item.publicUrl).pathname}?q=refunds`)).status).toBe(200);
    const one = await member.api.get(`${links()}/${created.id}`);
    expect(one.status).toBe(403);
    const got = await admin.api.get(`${links()}/${created.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(item);
  });

  it('PATCH changes name, allowedTags, expiresAt and historyMode', async () => {
    const created = (await owner.api.post(links(), { name: 'Old', allowedTags: [hr] })).body;
    const expiresAt = new Date(Date.now() + 7200_000).toISOString();
    const r = await owner.api.patch(`${links()}/${created.id}`, { name: 'New', allowedTags: [billing, hr], expiresAt, historyMode: true });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: created.id, name: 'New', allowedTags: [billing, hr], expiresAt, historyMode: true, documentCount: 2 });
    expect(r.body.token).toBe(created.token);
    expect(r.body.publicUrl).toBe(`${BASE}/public/${created.token}/search`);
    const cleared = await owner.api.patch(`${links()}/${created.id}`, { expiresAt: null, historyMode: 'OFF' });
    expect(cleared.body).toMatchObject({ expiresAt: null, historyMode: false, token: created.token, publicUrl: created.publicUrl });
    // The token keeps working after a PATCH.
    expect((await client(server.url).get(`/public/${created.token}/search?q=refunds`)).status).toBe(200);
  });

  it('refuses bad input with 400 VALIDATION_ERROR in the /api envelope', async () => {
    const cases = [
      { allowedTags: ['00000000-0000-0000-0000-000000000000'] },
      { allowedTags: 'Billing' },
      { expiresAt: '2001-01-01T00:00:00Z' },
      { expiresAt: 'tomorrow' },
      { name: 'x'.repeat(201) },
      { historyMode: 'maybe' },
    ];
    for (const body of cases) {
      const r = await owner.api.post(links(), body);
      expect(r.status).toBe(400);
      expect(r.body.error).toEqual({ code: 'VALIDATION_ERROR', message: expect.any(String), details: expect.any(Object), suggestion: expect.any(String) });
    }
  });

  it('DELETE deactivates a link for good: 204, public use 404, management shows it inactive', async () => {
    const created = (await owner.api.post(links(), {})).body;
    expect((await client(server.url).get(`/public/${created.token}/search?q=invoices`)).status).toBe(200);
    const del = await owner.api.delete(`${links()}/${created.id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    const pub = await client(server.url).get(`/public/${created.token}/search?q=invoices`);
    expect(pub.status).toBe(404);
    expect(pub.body).toEqual({ error: 'NOT_FOUND', message: expect.any(String) });
    expect((await owner.api.get(`${links()}/${created.id}`)).body.isActive).toBe(false);
    expect((await owner.api.delete(`${links()}/${created.id}`)).status).toBe(404);
    expect((await owner.api.patch(`${links()}/${created.id}`, { name: 'back?' })).status).toBe(404);
  });

  it('MEMBER gets 403 FORBIDDEN, non-members 404 WORKSPACE_NOT_FOUND, anonymous 401', async () => {
    const m = await member.api.post(links(), {});
    expect(m.status).toBe(403);
    expect(m.body.error.code).toBe('FORBIDDEN');
    expect((await member.api.get(links())).status).toBe(403);
    const stranger = await signUp(server.url, 'Stranger');
    const s = await stranger.api.get(links());
    expect(s.status).toBe(404);
    expect(s.body.error.code).toBe('WORKSPACE_NOT_FOUND');
    expect((await client(server.url).get(links())).status).toBe(401);
    expect((await owner.api.get(`${links()}/00000000-0000-0000-0000-000000000000`)).status).toBe(404);
  });

  it('allowPublicSearchLinks off: creation 403 PUBLIC_LINKS_DISABLED, existing links 404 until on again', async () => {
    const created = (await owner.api.post(links(), {})).body;
    await owner.api.put(`/v1/workspaces/${ws}`, { settings: { allowPublicSearchLinks: false } });
    const r = await owner.api.post(links(), {});
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('PUBLIC_LINKS_DISABLED');
    expect((await client(server.url).get(`/public/${created.token}/search?q=office`)).status).toBe(404);
    await owner.api.put(`/v1/workspaces/${ws}`, { settings: { allowPublicSearchLinks: true } });
    expect((await client(server.url).get(`/public/${created.token}/search?q=office`)).status).toBe(200);
  });

  it('deleting the workspace removes its links', async () => {
    const w = (await owner.api.post('/v1/workspaces', { name: 'Doomed' })).body.id;
    const created = (await owner.api.post(links(w), {})).body;
    expect((await client(server.url).get(`/public/${created.token}/search?q=x1`)).status).toBe(200);
    expect((await owner.api.delete(`/v1/workspaces/${w}`)).status).toBe(204);
    expect((await client(server.url).get(`/public/${created.token}/search?q=x1`)).status).toBe(404);
  });

  it('usage: request counts and latency percentiles per hour, no query text', async () => {
    const created = (await owner.api.post(links(), {})).body;
    const anon = client(server.url);
    for (const q of ['invoice dates', 'refund speed', 'office hours']) await anon.get(`/public/${created.token}/search?q=${encodeURIComponent(q)}`);
    const u = await owner.api.get(`${links()}/${created.id}/usage`);
    expect(u.status).toBe(200);
    expect(u.body.totals.requests).toBe(3);
    expect(u.body.totals.latencyMs.p50).toEqual(expect.any(Number));
    expect(u.body.totals.latencyMs.p95).toBeGreaterThanOrEqual(u.body.totals.latencyMs.p50);
    expect(u.body.hourly.reduce((n: number, h: { requests: number }) => n + h.requests, 0)).toBe(3);
    expect(u.text).not.toContain('refund speed');
    expect((await member.api.get(`${links()}/${created.id}/usage`)).status).toBe(403);
  });
});

describe('search link tokens survive restarts; the key lives outside the databases', () => {
  const stopped: TestServer[] = [];
  afterAll(async () => {
    for (const s of stopped) await s.stop();
  });

  it('a restart on the same data dir reuses link-token.key: the list still shows the token and URL', async () => {
    const first = await startServer({ KB_RATE_LIMITS: 'off', KB_BASE_URL: BASE });
    stopped.push(first);
    const user = await signUp(first.url, 'Restarter');
    const w = (await user.api.post('/v1/workspaces', { name: 'Restart' })).body.id;
    const created = (await user.api.post(`/api/workspaces/${w}/public-links`, { name: 'Kept' })).body;
    await first.stop();
    const second = await startServer({ KB_RATE_LIMITS: 'off', KB_BASE_URL: BASE }, first.dataDir);
    stopped.push(second);
    const again = client(second.url, user.token);
    const list = await again.get(`/api/workspaces/${w}/public-links`);
    expect(list.body.data).toEqual([expect.objectContaining({ id: created.id, token: created.token, publicUrl: `${BASE}/public/${created.token}/search` })]);
  });

  it('KB_LINK_TOKEN_KEY is used instead of a key file; a malformed one stops start-up', async () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    const s = await startServer({ KB_RATE_LIMITS: 'off', KB_BASE_URL: BASE, KB_LINK_TOKEN_KEY: key });
    stopped.push(s);
    const user = await signUp(s.url, 'EnvKey');
    const w = (await user.api.post('/v1/workspaces', { name: 'Env' })).body.id;
    const created = (await user.api.post(`/api/workspaces/${w}/public-links`, {})).body;
    expect((await user.api.get(`/api/workspaces/${w}/public-links/${created.id}`)).body.token).toBe(created.token);
    expect(fs.existsSync(path.join(s.dataDir, 'link-token.key'))).toBe(false);
    await s.stop();
    // Another key cannot open the stored ciphertexts: the link still works, its URL is just not shown.
    const other = await startServer({ KB_RATE_LIMITS: 'off', KB_BASE_URL: BASE, KB_LINK_TOKEN_KEY: Buffer.alloc(32, 9).toString('base64') }, s.dataDir);
    stopped.push(other);
    const got = (await client(other.url, user.token).get(`/api/workspaces/${w}/public-links/${created.id}`)).body;
    expect(got).toMatchObject({ id: created.id, tokenPrefix: created.token.slice(0, 8), publicUrl: null });
    expect(got.token).toBeUndefined();
    expect((await client(other.url).get(`/public/${created.token}/search?q=x`)).status).toBe(200);
    await other.stop();
    await expect(startServer({ KB_LINK_TOKEN_KEY: 'too-short' }, s.dataDir)).rejects.toThrow(/KB_LINK_TOKEN_KEY/);
  });
});
