import { client, signUp, startServer, TestServer } from '../support/server';

/**
 * Finding 10: one text rule for every human-entered string, case-sensitive routing,
 * unknown body keys refused, and unknown-token guessing limited per IP.
 */
const BAD_NAMES: [string, string][] = [
  ['NUL', 'evil\u0000name'],
  ['a lone surrogate', 'half \ud800 pair'],
  ['a bidi override', 'invoice\u202Egpj.exe'],
  ['a bidi isolate', 'a\u2066b'],
  ['a control character', 'bell\u0007'],
  ['a line break in a one-line name', 'two\nlines'],
  ['only spaces', '   '],
];
const emoji = (n: number) => '\u{1F600}'.repeat(n);
const rpc = (url: string, token: string, body: unknown) =>
  fetch(`${url}/mcp/${token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

describe('input hygiene', () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUp>>;
  let ws: string;
  let link: { id: string; token: string };

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    owner = await signUp(server.url, 'Owner');
    ws = (await owner.api.post('/v1/workspaces', { name: 'Hygiene' })).body.id;
    link = (await owner.api.post(`/api/workspaces/${ws}/public-links`, {})).body;
  });
  afterAll(async () => server?.stop());

  it.each(BAD_NAMES)('refuses a name with %s on every route that takes one', async (_what, bad) => {
    const set = (await owner.api.post(`/api/workspaces/${ws}/instruction-sets`, { name: 'Set' })).body;
    const tag = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: `Tag ${Math.random()}`, color: '#123456' })).body;
    const v1 = [
      await owner.api.post('/v1/workspaces', { name: bad }),
      await owner.api.put(`/v1/workspaces/${ws}`, { name: bad }),
      await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: bad, color: '#123456' }),
      await owner.api.put(`/v1/workspaces/${ws}/tags/${tag.id}`, { name: bad }),
      await owner.api.post('/v1/api-keys', { name: bad }),
      await client(server.url).post('/v1/auth/register', { email: `x${Math.random()}@example.com`, password: 'correct horse battery', name: bad }),
    ];
    for (const r of v1) {
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_ERROR');
    }
    const api = [
      await owner.api.post(`/api/workspaces/${ws}/instruction-sets`, { name: bad }),
      await owner.api.patch(`/api/instruction-sets/${set.id}`, { name: bad }),
      // A description is multi-line text: line breaks are fine, and blank means none.
      ...(bad.trim() === '' || bad.includes('\n') ? [] : [await owner.api.patch(`/api/instruction-sets/${set.id}`, { description: bad })]),
      ...(bad.trim() === '' ? [] : [await owner.api.post(`/api/workspaces/${ws}/public-links`, { name: bad }), await owner.api.patch(`/api/workspaces/${ws}/public-links/${link.id}`, { name: bad })]),
    ];
    for (const r of api) {
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('trims names, counts their length in characters (code points), and keeps line breaks in descriptions', async () => {
    const w = await owner.api.post('/v1/workspaces', { name: `  ${emoji(200)}  ` });
    expect(w.status).toBe(201);
    expect(w.body.name).toBe(emoji(200));
    expect((await owner.api.post('/v1/workspaces', { name: emoji(201) })).status).toBe(400);
    const s = await owner.api.post(`/api/workspaces/${ws}/instruction-sets`, { name: 'Multi-line', description: 'first line\nsecond\tline' });
    expect(s.status).toBe(201);
    expect(s.body.description).toBe('first line\nsecond\tline');
  });

  it('search queries must be valid text', async () => {
    const r = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'half \ud800 pair' });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('VALIDATION_ERROR');
    const p = await client(server.url).post(`/public/${link.token}/search`, { query: 'nul\u0000query' });
    expect(p.status).toBe(400);
    expect(p.body).toEqual({ error: 'VALIDATION_ERROR', message: expect.any(String) });
  });

  it('the tool endpoint counts query length in characters, like workspace search', async () => {
    const call = (id: number, query: string) => rpc(server.url, link.token, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'service_search', arguments: { query } } });
    // 200 emoji: 200 characters (400 UTF-16 units), within 2..256.
    expect((await call(1, emoji(200))).status).toBe(200);
    expect((await call(2, emoji(256))).status).toBe(200);
    const over = await call(3, emoji(257));
    expect(over.status).toBe(400);
    expect(over.body.error.code).toBe(-32602);
    const bad = await call(4, 'ok \ud800 query');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe(-32602);
  });

  it('routing is case-sensitive: /V1/... and /API/... are 404 NOT_FOUND', async () => {
    for (const p of ['/V1/workspaces', '/v1/Workspaces', '/API/workspaces/' + ws + '/instruction-sets', `/Public/${link.token}/search?q=x`, `/S/${link.id}?q=x`]) {
      const r = await owner.api.get(p);
      expect({ p, status: r.status }).toEqual({ p, status: 404 });
      expect(r.body.error?.code ?? r.body.error).toBe('NOT_FOUND');
    }
    expect((await owner.api.get('/v1/workspaces')).status).toBe(200);
  });

  it('unknown keys are refused with VALIDATION_ERROR naming the key', async () => {
    const settings = await owner.api.put(`/v1/workspaces/${ws}`, { settings: { allowPublicSearchLinks: true, allowPublicSerchLinks: false } });
    expect(settings.status).toBe(400);
    expect(settings.body.error.code).toBe('VALIDATION_ERROR');
    expect(settings.body.error.message).toContain('allowPublicSerchLinks');
    const top = await owner.api.post('/v1/workspaces', { name: 'Ok', colour: 'red' });
    expect(top.status).toBe(400);
    expect(top.body.error.message).toContain('colour');
    const proto = await owner.api.raw('POST', '/v1/workspaces', '{"name":"Ok","__proto__":{"admin":true}}');
    expect(proto.status).toBe(400);
    expect(proto.body.error.message).toContain('__proto__');
    const set = await owner.api.post(`/api/workspaces/${ws}/instruction-sets`, { name: 'Set', isPrivate: true });
    expect(set.status).toBe(400);
    expect(set.body.error).toEqual(expect.objectContaining({ code: 'VALIDATION_ERROR', message: expect.stringContaining('isPrivate') }));
    const search = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'refund', filters: { tag: ['x'] } });
    expect(search.status).toBe(400);
    expect(search.body.error.message).toContain('filters.tag');
  });
});

describe('unknown-token guessing is limited per IP', () => {
  let server: TestServer;
  afterAll(async () => server?.stop());

  it('failed look-ups on /public, /s and /mcp share one per-IP budget, then 429 in each envelope', async () => {
    server = await startServer({ KB_RATE_LIMITS: 'on', KB_UNKNOWN_TOKEN_PER_MINUTE: '5' });
    const owner = await signUp(server.url, 'Owner');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Guess' })).body.id;
    const link = (await owner.api.post(`/api/workspaces/${ws}/public-links`, {})).body;
    const anon = client(server.url);
    const guess = (i: number) => i.toString(16).padStart(64, 'a');
    for (let i = 0; i < 3; i++) expect((await anon.get(`/public/${guess(i)}/search?q=x`)).status).toBe(404);
    expect((await anon.get(`/s/00000000-0000-4000-8000-00000000000${1}?q=x`)).status).toBe(404);
    expect((await rpc(server.url, guess(9), { jsonrpc: '2.0', id: 1, method: 'ping' })).status).toBe(403);
    const over = await anon.get(`/public/${guess(10)}/search?q=x`);
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: 'RATE_LIMITED', message: expect.any(String) });
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await anon.get(`/s/00000000-0000-4000-8000-000000000002?q=x`)).status).toBe(429);
    const mcp = await rpc(server.url, guess(11), { jsonrpc: '2.0', id: 2, method: 'ping' });
    expect(mcp.status).toBe(429);
    expect(mcp.body).toEqual({ jsonrpc: '2.0', id: 2, error: { code: -32000, message: expect.any(String), data: { retryAfter: expect.any(Number) } } });
    // Once over, a right guess is not told apart from a wrong one: the look-up is not made.
    expect((await anon.get(`/public/${link.token}/search?q=x`)).status).toBe(429);
    // Authenticated routes are not affected.
    expect((await owner.api.get('/v1/workspaces')).status).toBe(200);
  });
});
