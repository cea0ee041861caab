import fs from 'node:fs';
import path from 'node:path';
import { client, signUp, startServer, TestServer } from '../support/server';
import { uploadVerified } from '../support/documents';

type Api = ReturnType<typeof client>;

const upload = (api: Api, ws: string, name: string, text: string): Promise<string> => uploadVerified(api, ws, name, text);

const rpc = (url: string, token: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}/mcp/${token}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

/** Every byte of every file under dir (the data dir: event log, read models, index, blobs). */
function allData(dir: string): Buffer {
  const parts: Buffer[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) parts.push(allData(p));
    else parts.push(fs.readFileSync(p));
  }
  return Buffer.concat(parts);
}

describe('privacy of search links and the tool endpoint', () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUp>>;
  let ws: string;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'debug' });
    owner = await signUp(server.url, 'Owner');
    ws = (await owner.api.post('/v1/workspaces', { name: 'Private' })).body.id;
    await upload(owner.api, ws, 'doc.txt', 'Refunds are paid back within five business days.');
  });
  afterAll(async () => server?.stop());

  it('logs neither tokens nor query text, on success and on errors', async () => {
    const link = (await owner.api.post(`/api/workspaces/${ws}/public-links`, {})).body;
    const secretQuery = 'zanzibar-pelican-refund-question';
    const anon = client(server.url);
    await anon.get(`/public/${link.token}/search?q=${secretQuery}`);
    await anon.post(`/public/${link.token}/search`, { query: secretQuery });
    await anon.get(`/public/${link.token}/search?q=${secretQuery}&limit=999`);
    await anon.get(`/s/${link.id}?q=${secretQuery}`);
    await rpc(server.url, link.token, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'service_search', arguments: { query: secretQuery } } });
    await rpc(server.url, link.token, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'service_search', arguments: { query: secretQuery, limit: 99 } } });
    await rpc(server.url, link.token, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'service_search', arguments: { query: secretQuery, tags: [secretQuery] } } });
    await fetch(`${server.url}/mcp/${link.token}`, { method: 'POST', body: `{"query":"${secretQuery}"` });
    await owner.api.post(`/v1/workspaces/${ws}/search`, { query: secretQuery });
    // The management answers carry the token (for the admin to copy); they are not logged either.
    expect((await owner.api.get(`/api/workspaces/${ws}/public-links`)).text).toContain(link.token);
    expect((await owner.api.get(`/api/workspaces/${ws}/public-links/${link.id}`)).body.token).toBe(link.token);
    await new Promise((r) => setTimeout(r, 300));
    const out = server.output();
    expect(out).toContain('[REDACTED]');
    expect(out).not.toContain(link.token);
    expect(out).not.toContain(secretQuery);
  });

  it('stores the token only hashed and encrypted: a database file alone leaks no usable token', async () => {
    const link = (await owner.api.post(`/api/workspaces/${ws}/public-links`, { name: 'Hashed' })).body;
    expect((await client(server.url).get(`/public/${link.token}/search?q=refund`)).status).toBe(200);
    // The admin can still read it back (decrypted with the key kept outside the databases)...
    const listed = (await owner.api.get(`/api/workspaces/${ws}/public-links`)).body.data.find((l: { id: string }) => l.id === link.id);
    expect(listed.token).toBe(link.token);
    // ...while neither the event log nor the read models (with their WAL/journal files) hold it.
    const dbFiles = fs.readdirSync(server.dataDir).filter((f) => /^(events|read)\.db/.test(f));
    expect(dbFiles).toEqual(expect.arrayContaining(['events.db', 'read.db']));
    for (const f of dbFiles) {
      const bytes = fs.readFileSync(path.join(server.dataDir, f));
      expect(bytes.includes(Buffer.from(link.token))).toBe(false);
      expect(bytes.includes(Buffer.from(link.token.slice(8)))).toBe(false);
    }
    const data = allData(server.dataDir);
    expect(data.includes(Buffer.from(link.token))).toBe(false);
    expect(data.includes(Buffer.from(link.token.slice(8)))).toBe(false);
    // The key is a separate owner-only file, not inside a database.
    expect(fs.statSync(path.join(server.dataDir, 'link-token.key')).mode & 0o777).toBe(0o600);
  });

  it('historyMode OFF (default): query text is never stored; counts are', async () => {
    const link = (await owner.api.post(`/api/workspaces/${ws}/public-links`, {})).body;
    const q = 'quokka-history-off-probe';
    await client(server.url).get(`/public/${link.token}/search?q=${q}`);
    await rpc(server.url, link.token, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'service_search', arguments: { query: q } } });
    const usage = await owner.api.get(`/api/workspaces/${ws}/public-links/${link.id}/usage`);
    expect(usage.body.totals.requests).toBe(2);
    expect(usage.body.storedQueries).toBe(0);
    expect(allData(server.dataDir).includes(Buffer.from(q))).toBe(false);
  });

  it('historyMode ON: query text is kept outside the event log, and forgotten when turned off', async () => {
    const link = (await owner.api.post(`/api/workspaces/${ws}/public-links`, { historyMode: true })).body;
    const q = 'wombat-history-on-probe';
    await client(server.url).get(`/public/${link.token}/search?q=${q}`);
    await rpc(server.url, link.token, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'service_search', arguments: { query: q } } });
    const usage = await owner.api.get(`/api/workspaces/${ws}/public-links/${link.id}/usage`);
    expect(usage.body.storedQueries).toBe(2);
    const events = fs.readFileSync(path.join(server.dataDir, 'events.db'));
    expect(events.includes(Buffer.from(q))).toBe(false);
    // The query history: newest first, paged by `before`.
    const q2 = 'wombat-second-probe';
    await client(server.url).get(`/public/${link.token}/search?q=${q2}`);
    const queries = `/api/workspaces/${ws}/public-links/${link.id}/queries`;
    const all = await owner.api.get(queries);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ historyMode: true, retentionDays: 90, nextBefore: null });
    expect(all.body.data.map((r: { query: string }) => r.query)).toEqual([q2, q, q]);
    const first = await owner.api.get(`${queries}?limit=1`);
    expect(first.body.data).toEqual([{ query: q2, at: all.body.data[0].at }]);
    expect(first.body.nextBefore).toBe(all.body.data[0].at);
    const next = await owner.api.get(`${queries}?limit=5&before=${encodeURIComponent(first.body.nextBefore)}`);
    expect(next.body.data.map((r: { query: string }) => r.query)).toEqual([q, q]);
    for (const bad of ['?limit=0', '?limit=201', '?before=yesterday', '?page=2']) {
      const r = await owner.api.get(queries + bad);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_ERROR');
    }
    // Another workspace's owner: not found; its own workspace path with this link id: not found either.
    const other = await signUp(server.url, 'Other');
    const otherWs = (await other.api.post('/v1/workspaces', { name: 'Other' })).body.id;
    expect((await other.api.get(queries)).status).toBe(404);
    expect((await other.api.get(`/api/workspaces/${otherWs}/public-links/${link.id}/queries`)).status).toBe(404);
    await owner.api.patch(`/api/workspaces/${ws}/public-links/${link.id}`, { historyMode: false });
    expect((await owner.api.get(`/api/workspaces/${ws}/public-links/${link.id}/usage`)).body.storedQueries).toBe(0);
    expect((await owner.api.get(queries)).body).toMatchObject({ historyMode: false, data: [] });
  });

  it('client IPs and user agents are kept only as hashes', async () => {
    const link = (await owner.api.post(`/api/workspaces/${ws}/public-links`, {})).body;
    const ua = 'PrivacyProbeAgent/9.9 (unique-ua-marker)';
    await client(server.url).get(`/public/${link.token}/search?q=refund`, { 'user-agent': ua });
    await rpc(server.url, link.token, { jsonrpc: '2.0', id: 1, method: 'ping' }, { 'user-agent': ua });
    const usage = await owner.api.get(`/api/workspaces/${ws}/public-links/${link.id}/usage`);
    expect(usage.body.totals.distinctClients).toBe(1);
    expect(allData(server.dataDir).includes(Buffer.from('unique-ua-marker'))).toBe(false);
  });
});
