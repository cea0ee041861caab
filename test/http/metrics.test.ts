import { randomBytes } from 'node:crypto';
import { uploadVerified } from '../support/documents';
import { signUp, startServer, TestServer } from '../support/server';

const TOKEN = 'metrics-token-0123456789abcdef';
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

/** `name{labels} value` lines of an exposition, parsed. */
function samples(text: string): { name: string; labels: Map<string, string>; value: number }[] {
  return text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(l);
      if (!m) throw new Error(`not an exposition line: ${l}`);
      const labels = new Map<string, string>();
      for (const p of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels.set(p[1], p[2]);
      return { name: m[1], labels, value: Number(m[3]) };
    });
}

const sum = (s: ReturnType<typeof samples>, name: string, where: (l: Map<string, string>) => boolean = () => true) =>
  s.filter((x) => x.name === name && where(x.labels)).reduce((n, x) => n + x.value, 0);

describe('/metrics', () => {
  let server: TestServer;
  afterAll(async () => {
    await server?.stop();
  });

  it('needs the token, and labels requests by route template only (no ids, no tokens)', async () => {
    server = await startServer({ KB_METRICS_TOKEN: TOKEN, KB_UNKNOWN_TOKEN_PER_MINUTE: '2', KB_LOG_LEVEL: 'warn' });
    const metrics = (auth?: string) => fetch(`${server.url}/metrics`, { headers: auth ? { authorization: auth } : {} });
    expect((await metrics()).status).toBe(401);
    expect((await metrics(`Bearer ${TOKEN}x`)).status).toBe(401);
    expect((await metrics(`Basic ${TOKEN}`)).status).toBe(401);
    const refused = await metrics('Bearer wrong');
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: unknown }).error).toBe('UNAUTHORIZED'); // the envelope of the root-level routes

    const owner = await signUp(server.url, 'Metrics');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Metrics' })).body.id as string;
    const doc = await uploadVerified(owner.api, ws, 'm.txt', 'Lighthouses keep the harbour safe at night.');
    expect((await owner.api.get(`/v1/workspaces/${ws}/documents/${doc}`)).status).toBe(200);
    expect((await owner.api.get(`/api/v1/documents/${doc}`)).status).toBe(200);
    expect((await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'harbour', limit: 3 })).status).toBe(200);
    // Refused before their route ran (the auth guard of a router): labelled by the route that would have served them.
    const anon = (p: string) => fetch(`${server.url}${p}`).then((x) => x.status);
    expect(await anon(`/v1/workspaces/${ws}/documents`)).toBe(401);
    expect(await anon(`/api/v1/documents/${doc}/file`)).toBe(401);
    expect(await anon(`/api/instruction-sets/${doc}`)).toBe(401);
    // ... and `unmatched` when no route would have (the guard covers the prefix, no route the path).
    expect(await anon(`/v1/workspaces/${ws}/documents/${doc}/nothing-here`)).toBe(401);
    const secretPath = `zz${randomBytes(6).toString('hex')}`;
    expect((await owner.api.get(`/v1/${secretPath}`)).status).toBe(404);
    const fakeToken = `kb_${randomBytes(12).toString('hex')}`;
    const statuses: number[] = [];
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
    for (let i = 0; i < 2; i++) statuses.push((await fetch(`${server.url}/mcp/${fakeToken}`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify(init) })).status);
    for (let i = 0; i < 2; i++) statuses.push((await fetch(`${server.url}/public/${fakeToken}/search?q=harbour`)).status);
    expect(statuses).toContain(429);
    expect((await fetch(`${server.url}/s/${fakeToken}x`)).status).toBeGreaterThanOrEqual(400);

    const r = await metrics(`Bearer ${TOKEN}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await r.text();
    // Nothing a client sent in a path shows up: no ids, no tokens, no unknown paths.
    expect(text).not.toMatch(UUID);
    for (const s of [fakeToken, secretPath, TOKEN]) expect(text).not.toContain(s);
    const s = samples(text);
    const routes = new Set(s.filter((x) => x.name === 'kb_http_requests_total').map((x) => x.labels.get('route') ?? ''));
    for (const route of routes) expect(route).toMatch(/^(unmatched|(\/[\w.-]*|\/:\w+)+)$/);
    for (const route of ['/v1/workspaces/:id/documents/:docId', '/api/v1/documents/:docId', '/v1/workspaces/:id/search', '/mcp/:token', '/s/:linkId', '/v1/auth/login', 'unmatched']) expect(routes).toContain(route);
    const count = (route: string, status: string) => sum(s, 'kb_http_requests_total', (l) => l.get('route') === route && l.get('status') === status);
    expect(count('/v1/workspaces/:id/search', '200')).toBe(1);
    expect(sum(s, 'kb_http_request_duration_seconds_count', (l) => l.get('route') === '/v1/workspaces/:id/search')).toBe(1);
    expect(count('/v1/workspaces/:id/documents', '401')).toBe(1);
    expect(count('/api/v1/documents/:docId/file', '401')).toBe(1);
    expect(count('/api/instruction-sets/:id', '401')).toBe(1);
    expect(count('unmatched', '401')).toBe(1);

    // The pipeline and the stores.
    expect(sum(s, 'kb_event_store_append_duration_seconds_count')).toBeGreaterThan(5);
    expect(sum(s, 'kb_event_store_group_commit_appends_count')).toBeGreaterThan(0);
    expect(sum(s, 'kb_extraction_duration_seconds_count', (l) => l.get('kind') === 'txt' && l.get('outcome') === 'ok')).toBe(1);
    expect(sum(s, 'kb_embedding_duration_seconds_count')).toBeGreaterThan(0);
    expect(sum(s, 'kb_chunks_embedded_total')).toBeGreaterThan(0);
    expect(sum(s, 'kb_search_duration_seconds_count', (l) => l.get('mode') === 'hybrid')).toBe(1);
    expect(sum(s, 'kb_processing_documents', (l) => l.get('status') === 'VERIFIED')).toBe(1);
    expect(sum(s, 'kb_processing_documents', (l) => l.get('status') === 'PROCESSING')).toBe(0);
    const lag = s.filter((x) => x.name === 'kb_projection_lag_events');
    expect(lag.map((x) => x.labels.get('projection'))).toEqual(expect.arrayContaining(['documents', 'search-index']));
    for (const x of lag) expect(x.value).toBeGreaterThanOrEqual(0);
    expect(sum(s, 'kb_event_log_head_position')).toBeGreaterThan(5);
    expect(s.filter((x) => x.name === 'kb_embedding_model_active').map((x) => [x.labels.get('model'), x.value])).toEqual([['local:glove-sif-100d', 1]]);
    expect(s.some((x) => x.name === 'kb_reembedding_documents')).toBe(false); // no model change under way
    expect(sum(s, 'kb_rate_limit_rejections_total', (l) => l.get('limiter') === 'unknown-credential')).toBeGreaterThan(0);
  });

  it('KB_METRICS_PORT: served on its own listener only', async () => {
    await server?.stop();
    server = await startServer({ KB_METRICS_PORT: '0', KB_LOG_LEVEL: 'warn' });
    expect((await fetch(`${server.url}/metrics`)).status).toBe(404);
    let port = 0;
    for (let i = 0; i < 100 && !port; i++) {
      port = Number(/KB_METRICS_LISTENING (\d+)/.exec(server.output())?.[1] ?? 0);
      if (!port) await new Promise((r) => setTimeout(r, 50));
    }
    const r = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(r.status).toBe(200);
    expect(await r.text()).toContain('kb_http_requests_total');
    expect((await fetch(`http://127.0.0.1:${port}/v1/auth/login`)).status).toBe(404);
  });
});
