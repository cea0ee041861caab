import http from 'node:http';
import { signUp, startServer, TestServer } from '../support/server';

/**
 * JSON answers are written by `respond` (src/http/responses.ts) without express's `res.json`:
 * the same status, headers and bytes, HEAD without a body, and a conditional GET still
 * answered by express (304 for `If-None-Match: *`, as before).
 */
describe('JSON answers: headers and bytes', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
  });
  afterAll(async () => server.stop());

  const fetchRaw = async (method: string, path: string, token: string, headers: Record<string, string> = {}, body?: unknown) => {
    const res = await fetch(server.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, bytes };
  };

  it('a 201 and a 200 carry their JSON with its UTF-8 length; HEAD has the headers and no body', async () => {
    const owner = await signUp(server.url, 'Answers');
    const name = 'Café ✓ 研究';
    const created = await fetchRaw('POST', '/v1/workspaces', owner.token, {}, { name });
    expect(created.status).toBe(201);
    expect(created.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(Number(created.headers.get('content-length'))).toBe(created.bytes.length);
    const body = JSON.parse(created.bytes.toString('utf8'));
    expect(body.name).toBe(name);
    expect(created.bytes.toString('utf8')).toBe(JSON.stringify(body));
    // The headers every answer carries are still set.
    expect(created.headers.get('x-request-id')).toEqual(expect.any(String));
    expect(created.headers.get('cache-control')).toBe('no-store');
    expect(created.headers.get('x-content-type-options')).toBe('nosniff');
    expect(created.headers.get('etag')).toBeNull();

    const got = await fetchRaw('GET', `/v1/workspaces/${body.id}`, owner.token);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(Number(got.headers.get('content-length'))).toBe(got.bytes.length);
    expect(JSON.parse(got.bytes.toString('utf8'))).toMatchObject({ id: body.id, name });

    const head = await fetchRaw('HEAD', `/v1/workspaces/${body.id}`, owner.token);
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(head.headers.get('content-length')).toBe(got.headers.get('content-length'));
    expect(head.bytes.length).toBe(0);
  });

  /** node's own client: fetch adds `Cache-Control: no-cache` to conditional requests, which express then never answers 304. */
  const plainGet = (path: string, headers: Record<string, string>) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(server.url + path, { method: 'GET', headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end();
    });

  it('a conditional GET is answered as express answers it (If-None-Match: * is 304)', async () => {
    const owner = await signUp(server.url, 'Conditional');
    const auth = { authorization: `Bearer ${owner.token}` };
    expect(await plainGet('/v1/workspaces', { ...auth, 'if-none-match': '*' })).toEqual({ status: 304, text: '' });
    expect(await plainGet('/v1/workspaces', { ...auth, 'if-none-match': '"some-etag"' })).toEqual({ status: 200, text: '[]' });
    expect(await plainGet('/v1/workspaces', auth)).toEqual({ status: 200, text: '[]' });
  });
});
