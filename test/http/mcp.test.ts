import http from 'node:http';
import { client, signUp, startServer, TestServer } from '../support/server';
import { uploadVerified } from '../support/documents';


const upload = uploadVerified;

interface RpcAnswer {
  status: number;
  body: any;
  text: string;
  headers: Headers;
}

async function rpc(url: string, token: string, body: unknown, headers: Record<string, string> = {}, method = 'POST'): Promise<RpcAnswer> {
  const res = await fetch(`${url}/mcp/${token}`, {
    method,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: method === 'POST' ? (typeof body === 'string' ? body : JSON.stringify(body)) : undefined,
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: res.status, body: parsed, text, headers: res.headers };
}

const call = (id: number, args: unknown, name = 'service_search') => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const decodeResult = (a: RpcAnswer) => JSON.parse(a.body.result.content[0].text);

describe('tool endpoint /mcp/:token (JSON-RPC over MCP Streamable HTTP)', () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUp>>;
  let ws: string;
  let billing: string;
  let hr: string;
  let refundsDoc: string;
  let link: { id: string; token: string };

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    owner = await signUp(server.url, 'Owner');
    ws = (await owner.api.post('/v1/workspaces', { name: 'Tools' })).body.id;
    billing = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'Billing', color: '#112233' })).body.id;
    hr = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'HR', color: '#445566' })).body.id;
    refundsDoc = await upload(owner.api, ws, 'refunds.txt', 'Refunds are paid back to the original card within five business days.', [billing]);
    await upload(owner.api, ws, 'leave.txt', 'Parental leave is sixteen weeks at full pay.', [hr]);
    await upload(owner.api, ws, 'secret.txt', 'Internal: VIP refunds are paid the same day.');
    link = (await owner.api.post(`/api/workspaces/${ws}/public-links`, { allowedTags: [billing] })).body;
  });
  afterAll(async () => server?.stop());

  it('initialize answers protocolVersion 2025-06-18, tools capability and serverInfo (even for a newer client)', async () => {
    for (const asked of ['2025-06-18', '2025-11-25']) {
      const r = await rpc(server.url, link.token, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: asked, capabilities: {}, clientInfo: { name: 'test', version: '1.0.0' } } });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/application\/json/);
      expect(r.body).toEqual({ jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: expect.any(String), version: expect.stringMatching(/^\d+\.\d+\.\d+$/) } } });
    }
  });

  it('tools/list (without params) lists exactly service_search with a generated description and schema', async () => {
    const r = await rpc(server.url, link.token, { jsonrpc: '2.0', id: 'list', method: 'tools/list' });
    expect(r.status).toBe(200);
    expect(r.body.id).toBe('list');
    expect(r.body.result.tools).toHaveLength(1);
    const tool = r.body.result.tools[0];
    expect(tool.name).toBe('service_search');
    expect(tool.description).toContain('Billing');
    expect(tool.description).toContain(billing);
    expect(tool.description).not.toContain(hr);
    expect(tool.inputSchema).toMatchObject({ type: 'object', required: ['query'], properties: { query: { type: 'string' }, limit: { type: 'number' }, tags: { type: 'array', items: { type: 'string' } } } });
  });

  it('tools/call answers one text item holding {results, totalCount} from the link scope only', async () => {
    const r = await rpc(server.url, link.token, call(7, { query: 'how fast are refunds paid', limit: 20 }));
    expect(r.status).toBe(200);
    expect(r.body.id).toBe(7);
    expect(r.body.result.content).toHaveLength(1);
    expect(r.body.result.content[0].type).toBe('text');
    const out = decodeResult(r);
    expect(out.totalCount).toBe(out.results.length);
    expect(out.results).toEqual([{ title: 'refunds.txt', content: expect.stringContaining('five business days'), score: expect.any(Number) }]);
    expect(r.text).not.toContain('VIP');
    void refundsDoc;
  });

  it('tags may be names or ids; tags outside allowedTags are -32602', async () => {
    expect(decodeResult(await rpc(server.url, link.token, call(1, { query: 'refunds', tags: ['billing'] }))).totalCount).toBe(1);
    expect(decodeResult(await rpc(server.url, link.token, call(2, { query: 'refunds', tags: [billing] }))).totalCount).toBe(1);
    for (const tags of [['HR'], [hr], ['nope']]) {
      const r = await rpc(server.url, link.token, call(3, { query: 'parental leave', tags }));
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ jsonrpc: '2.0', id: 3, error: { code: -32602, message: expect.any(String) } });
    }
  });

  it.each([
    ['a one-character query', { query: 'a' }],
    ['a 257-character query', { query: 'q'.repeat(257) }],
    ['no query', {}],
    ['limit 0', { query: 'refunds', limit: 0 }],
    ['limit 21', { query: 'refunds', limit: 21 }],
  ])('%s is -32602 with HTTP 400', async (_n, args) => {
    const r = await rpc(server.url, link.token, call(4, args));
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe(-32602);
    expect(r.body.id).toBe(4);
  });

  it('query of 2 and 256 characters and limit 1 and 20 are accepted', async () => {
    expect((await rpc(server.url, link.token, call(5, { query: 'rf', limit: 1 }))).status).toBe(200);
    expect((await rpc(server.url, link.token, call(5, { query: 'r'.repeat(256), limit: 20 }))).status).toBe(200);
  });

  it('an unknown tool is -32602 (400); an unknown method -32601 (200)', async () => {
    const t = await rpc(server.url, link.token, call(6, { query: 'refunds' }, 'other_tool'));
    expect([t.status, t.body.error.code]).toEqual([400, -32602]);
    const m = await rpc(server.url, link.token, { jsonrpc: '2.0', id: 8, method: 'resources/list', params: {} });
    expect(m.status).toBe(200);
    expect(m.body).toEqual({ jsonrpc: '2.0', id: 8, error: { code: -32601, message: expect.any(String) } });
  });

  it('ping answers {}; notifications answer 202 with no body', async () => {
    expect((await rpc(server.url, link.token, { jsonrpc: '2.0', id: 9, method: 'ping' })).body).toEqual({ jsonrpc: '2.0', id: 9, result: {} });
    const n = await rpc(server.url, link.token, { jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(n.status).toBe(202);
    expect(n.text).toBe('');
  });

  it('invalid JSON is -32700; bad JSON-RPC structure is -32600 (HTTP 400)', async () => {
    const p = await rpc(server.url, link.token, '{"jsonrpc": "2.0", "id": 1, "method": ');
    expect(p.status).toBe(400);
    expect(p.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: expect.any(String) } });
    for (const body of [{ id: 1, method: 'ping' }, { jsonrpc: '1.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: 1 }, [{ jsonrpc: '2.0', id: 1, method: 'ping' }], '"text"']) {
      const r = await rpc(server.url, link.token, body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe(-32600);
    }
  });

  it('invalid, revoked, expired tokens and disabled links are -32002 with HTTP 403', async () => {
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    for (const t of ['0'.repeat(64), 'not-a-token']) {
      const r = await rpc(server.url, t, ping);
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ jsonrpc: '2.0', id: 1, error: { code: -32002, message: expect.any(String) } });
    }
    const revoked = (await owner.api.post(`/api/workspaces/${ws}/public-links`, {})).body;
    expect((await rpc(server.url, revoked.token, ping)).status).toBe(200);
    await owner.api.delete(`/api/workspaces/${ws}/public-links/${revoked.id}`);
    expect((await rpc(server.url, revoked.token, ping)).body.error.code).toBe(-32002);

    const expiring = (await owner.api.post(`/api/workspaces/${ws}/public-links`, { expiresAt: new Date(Date.now() + 1500).toISOString() })).body;
    expect((await rpc(server.url, expiring.token, ping)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2000));
    const e = await rpc(server.url, expiring.token, call(2, { query: 'refunds' }));
    expect(e.status).toBe(403);
    expect(e.body.error.code).toBe(-32002);

    await owner.api.put(`/v1/workspaces/${ws}`, { settings: { allowPublicSearchLinks: false } });
    expect((await rpc(server.url, link.token, ping)).status).toBe(403);
    await owner.api.put(`/v1/workspaces/${ws}`, { settings: { allowPublicSearchLinks: true } });
    expect((await rpc(server.url, link.token, ping)).status).toBe(200);
  });

  it('OPTIONS is 204 with Allow and no CORS headers; GET is 405', async () => {
    const o = await rpc(server.url, link.token, undefined, { origin: server.url }, 'OPTIONS');
    expect(o.status).toBe(204);
    expect(o.headers.get('allow')).toContain('POST');
    expect(o.headers.get('access-control-allow-origin')).toBeNull();
    const g = await rpc(server.url, link.token, undefined, {}, 'GET');
    expect(g.status).toBe(405);
    expect(g.headers.get('allow')).toContain('POST');
  });

  it('refuses a foreign Origin (DNS rebinding) with 403 and never sends Access-Control-Allow-Origin', async () => {
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    const evil = await rpc(server.url, link.token, ping, { origin: 'http://evil.example.com' });
    expect(evil.status).toBe(403);
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    const port = new URL(server.url).port;
    // fetch may not send a Host of our choosing: use node:http.
    const reboundStatus = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${server.url}/mcp/${link.token}`, { method: 'POST', headers: { 'content-type': 'application/json', host: `evil.example.com:${port}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(JSON.stringify(ping));
    });
    expect(reboundStatus).toBe(403);
    const own = await rpc(server.url, link.token, ping, { origin: server.url });
    expect(own.status).toBe(200);
    expect(own.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('an unsupported MCP-Protocol-Version header is 400; supported ones pass', async () => {
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    const bad = await rpc(server.url, link.token, ping, { 'mcp-protocol-version': '1999-01-01' });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ jsonrpc: '2.0', id: 1, error: { code: -32600, message: expect.any(String) } });
    expect((await rpc(server.url, link.token, ping, { 'mcp-protocol-version': '2025-06-18' })).status).toBe(200);
  });

  it('a body over 1 MB is refused', async () => {
    const r = await rpc(server.url, link.token, call(1, { query: 'x'.repeat(1100 * 1024) }));
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe(-32600);
  });
});

describe('tool endpoint rate limits', () => {
  let server: TestServer;
  afterAll(async () => server?.stop());

  it('30 per minute per link (separate from public HTTP search) and 100 per minute per client IP', async () => {
    server = await startServer({ KB_RATE_LIMITS: 'on' });
    const owner = await signUp(server.url, 'Owner');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Limited' })).body.id;
    const links = [];
    for (let i = 0; i < 5; i++) links.push((await owner.api.post(`/api/workspaces/${ws}/public-links`, {})).body);
    const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });
    for (let i = 0; i < 30; i++) expect((await rpc(server.url, links[0].token, ping(i))).status).toBe(200);
    const over = await rpc(server.url, links[0].token, ping(99));
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ jsonrpc: '2.0', id: 99, error: { code: -32000, message: expect.any(String), data: { retryAfter: expect.any(Number) } } });
    expect(Number(over.headers.get('retry-after'))).toBe(over.body.error.data.retryAfter);
    // The public HTTP search of the same link has its own budget.
    expect((await client(server.url).get(`/public/${links[0].token}/search?q=hello`)).status).toBe(200);
    // 31 requests used from this IP so far; 69 more across other links reach 100.
    let used = 31;
    for (let l = 1; used < 100; l = (l % 4) + 1) {
      expect((await rpc(server.url, links[l].token, ping(used))).status).toBe(200);
      used++;
    }
    const ipOver = await rpc(server.url, links[4].token, ping(101));
    expect(ipOver.status).toBe(429);
    // The per-IP refusal echoes the request's id too (the body parsed), like the per-link one.
    expect(ipOver.body).toEqual({ jsonrpc: '2.0', id: 101, error: { code: -32000, message: expect.any(String), data: { retryAfter: expect.any(Number) } } });
    expect(Number(ipOver.headers.get('retry-after'))).toBe(ipOver.body.error.data.retryAfter);
    const stringId = await rpc(server.url, links[3].token, { jsonrpc: '2.0', id: 'req-abc', method: 'tools/list' });
    expect(stringId.status).toBe(429);
    expect(stringId.body.id).toBe('req-abc');
    // Only a body that is not JSON leaves the id unknown: null.
    const unparsable = await rpc(server.url, links[2].token, '{"jsonrpc":"2.0","id":5,');
    expect(unparsable.status).toBe(429);
    expect(unparsable.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32000, message: expect.any(String), data: { retryAfter: expect.any(Number) } } });
  });
});
