import { gzipSync, brotliCompressSync, deflateSync } from 'node:zlib';
import { signUp, startServer, TestServer } from '../support/server';

/**
 * Finding 8: an error raised while reading a body (corrupt compression, unsupported
 * encoding or charset, ...) carries its own 4xx status and answers in the route's
 * envelope; it is never a 500 and never logged as an unhandled error.
 */
describe('bodies that cannot be read answer 4xx, never 500', () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUp>>;
  let ws: string;
  let link: { id: string; token: string };

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    owner = await signUp(server.url, 'Owner');
    ws = (await owner.api.post('/v1/workspaces', { name: 'Bodies' })).body.id;
    link = (await owner.api.post(`/api/workspaces/${ws}/public-links`, {})).body;
  });
  afterAll(async () => server?.stop());

  const send = async (path: string, body: Buffer | string, headers: Record<string, string>, auth = true) => {
    const res = await fetch(server.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${owner.token}` } : {}), ...headers },
      body,
    });
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, body: json, text };
  };

  const routes = () => [
    { path: '/v1/workspaces', auth: true, envelope: (b: any) => typeof b?.error?.code === 'string' && typeof b.error.message === 'string' && b.error.suggestion === undefined },
    { path: `/api/workspaces/${ws}/instruction-sets`, auth: true, envelope: (b: any) => typeof b?.error?.code === 'string' && typeof b.error.suggestion === 'string' },
    { path: `/public/${link.token}/search`, auth: false, envelope: (b: any) => typeof b?.error === 'string' && typeof b.message === 'string' },
  ];

  it.each(['gzip', 'deflate', 'br', 'GZIP'])('content-encoding %s with a body that is not compressed: 400 in the envelope', async (encoding) => {
    for (const r of routes()) {
      const a = await send(r.path, '{"name":"plain, not compressed"}', { 'content-encoding': encoding }, r.auth);
      expect({ path: r.path, status: a.status }).toEqual({ path: r.path, status: 400 });
      expect(r.envelope(a.body)).toBe(true);
      expect(a.text).not.toMatch(/at .*\.js:\d+/);
    }
  });

  it('an unsupported content-encoding or charset is 415 in the envelope', async () => {
    for (const r of routes()) {
      const enc = await send(r.path, '{"name":"x"}', { 'content-encoding': 'compress' }, r.auth);
      expect({ path: r.path, status: enc.status }).toEqual({ path: r.path, status: 415 });
      expect(r.envelope(enc.body)).toBe(true);
      const cs = await send(r.path, '{"name":"x"}', { 'content-type': 'application/json; charset=klingon' }, r.auth);
      expect({ path: r.path, status: cs.status }).toEqual({ path: r.path, status: 415 });
      expect(r.envelope(cs.body)).toBe(true);
    }
  });

  it('correctly compressed bodies still work', async () => {
    const json = JSON.stringify({ name: 'Compressed' });
    for (const [encoding, body] of [['gzip', gzipSync(json)], ['deflate', deflateSync(json)], ['br', brotliCompressSync(json)]] as const) {
      const a = await send('/v1/workspaces', body, { 'content-encoding': encoding });
      expect(a.status).toBe(201);
      expect(a.body.name).toBe('Compressed');
    }
  });

  it('the tool endpoint answers a JSON-RPC error with 400 for a corrupt compressed body, and reads a good one', async () => {
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' });
    for (const encoding of ['gzip', 'deflate', 'br']) {
      const a = await send(`/mcp/${link.token}`, 'definitely not compressed', { 'content-encoding': encoding }, false);
      expect(a.status).toBe(400);
      expect(a.body).toEqual({ jsonrpc: '2.0', id: null, error: { code: expect.any(Number), message: expect.any(String) } });
    }
    const good = await send(`/mcp/${link.token}`, gzipSync(ping), { 'content-encoding': 'gzip' }, false);
    expect(good.status).toBe(200);
    expect(good.body).toEqual({ jsonrpc: '2.0', id: 7, result: {} });
    const unsupported = await send(`/mcp/${link.token}`, ping, { 'content-encoding': 'compress' }, false);
    expect(unsupported.status).toBe(415);
    expect(unsupported.body.jsonrpc).toBe('2.0');
    expect(unsupported.body.error.code).toBe(-32600);
  });

  it('logged no unhandled error and no stack trace', async () => {
    await new Promise((r) => setTimeout(r, 200));
    const out = server.output();
    expect(out).not.toContain('unhandled error');
    expect(out).not.toContain('internal error');
    expect(out).not.toMatch(/"stack"/);
    expect(out).not.toMatch(/"status":5\d\d/);
  });
});
