import { client, signUp, startServer, TestServer } from '../support/server';
import { uploadVerified } from '../support/documents';


const upload = uploadVerified;

const sentence = (i: number) => `Paragraph ${i}: refund requests are checked by the billing desk and paid out on weekday ${i}. `;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('public search /public/:token/search and /s/:linkId', () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUp>>;
  let ws: string;
  let billing: string;
  let hr: string;
  let legal: string;
  let refundsDoc: string;
  let untaggedDoc: string;
  let mixedDoc: string;
  let link: { id: string; token: string };
  const anon = () => client(server.url);

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    owner = await signUp(server.url, 'Owner');
    ws = (await owner.api.post('/v1/workspaces', { name: 'Public' })).body.id;
    billing = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'Billing', color: '#112233' })).body.id;
    hr = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'HR', color: '#445566' })).body.id;
    legal = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'Legal', color: '#778899' })).body.id;
    refundsDoc = await upload(owner.api, ws, 'refunds.txt', 'Refunds are paid back to the original card within five business days.', [billing]);
    mixedDoc = await upload(owner.api, ws, 'mixed.txt', 'Refund disputes with staff are escalated to the people team and to legal.', [billing, hr, legal]);
    // Same topic, no tag: must never appear through a tag-scoped link.
    untaggedDoc = await upload(owner.api, ws, 'secret.txt', 'Internal: refunds to VIP customers are paid the same day, never tell the public.');
    await upload(owner.api, ws, 'manual.txt', Array.from({ length: 150 }, (_, i) => sentence(i)).join(''), [billing]);
    link = (await owner.api.post(`/api/workspaces/${ws}/public-links`, { name: 'Scoped', allowedTags: [billing, hr] })).body;
  });
  afterAll(async () => server?.stop());

  it('GET answers results {documentId, title, content, score, tags} and totalResults', async () => {
    const r = await anon().get(`/public/${link.token}/search?q=${encodeURIComponent('original card within five business days')}&limit=50`);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['results', 'totalResults']);
    expect(r.body.totalResults).toBe(r.body.results.length);
    const hit = r.body.results.find((x: { documentId: string }) => x.documentId === refundsDoc);
    expect(hit).toEqual({ documentId: refundsDoc, title: 'refunds.txt', content: expect.stringContaining('five business days'), score: expect.any(Number), tags: [billing] });
    for (const x of r.body.results) expect(x.score >= 0 && x.score <= 1).toBe(true);
  });

  it('never returns a document outside the scope, and cuts result tags to the scope', async () => {
    const r = await anon().get(`/public/${link.token}/search?q=${encodeURIComponent('refunds VIP customers same day internal')}&limit=50`);
    const ids = r.body.results.map((x: { documentId: string }) => x.documentId);
    expect(ids).not.toContain(untaggedDoc);
    expect(r.text).not.toContain('VIP');
    const mixed = r.body.results.find((x: { documentId: string }) => x.documentId === mixedDoc);
    expect(mixed.tags.sort()).toEqual([billing, hr].sort());
    // The workspace search does see it: the scope, not the ranking, keeps it out.
    const inside = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'refunds VIP customers same day internal', limit: 20 });
    expect(inside.body.results.map((x: { documentId: string }) => x.documentId)).toContain(untaggedDoc);
  });

  it('limit defaults to 10, accepts 50, refuses 0 and 51', async () => {
    const d = await anon().get(`/public/${link.token}/search?q=refund%20billing%20desk`);
    expect(d.body.results).toHaveLength(10);
    const m = await anon().get(`/public/${link.token}/search?q=refund%20billing%20desk&limit=50`);
    expect(m.body.results.length).toBeGreaterThan(10);
    expect(m.body.results.length).toBeLessThanOrEqual(50);
    for (const bad of ['0', '51', 'ten']) {
      const r = await anon().get(`/public/${link.token}/search?q=refund&limit=${bad}`);
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ error: 'VALIDATION_ERROR', message: expect.any(String) });
    }
  });

  it('q is required (400 QUERY_REQUIRED) and at most 1000 characters', async () => {
    const r = await anon().get(`/public/${link.token}/search`);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: 'QUERY_REQUIRED', message: expect.any(String) });
    expect((await anon().get(`/public/${link.token}/search?q=${'a'.repeat(1001)}`)).body.error).toBe('QUERY_TOO_LONG');
  });

  it('tags narrow within allowedTags; a tag outside them is 400', async () => {
    const r = await anon().get(`/public/${link.token}/search?q=refund%20disputes&tags=${hr}&limit=50`);
    expect(r.status).toBe(200);
    expect(r.body.results.map((x: { documentId: string }) => x.documentId)).toEqual([mixedDoc]);
    const out = await anon().get(`/public/${link.token}/search?q=refund&tags=${hr},${legal}`);
    expect(out.status).toBe(400);
    expect(out.body.error).toBe('TAG_NOT_ALLOWED');
  });

  it('POST takes {query, limit, tags} and answers the same shape', async () => {
    const r = await anon().post(`/public/${link.token}/search`, { query: 'how fast are refunds paid', limit: 2, tags: [billing] });
    expect(r.status).toBe(200);
    expect(r.body.results).toHaveLength(2);
    expect(r.body.totalResults).toBe(2);
    expect(Object.keys(r.body.results[0]).sort()).toEqual(['content', 'documentId', 'score', 'tags', 'title']);
    expect((await anon().post(`/public/${link.token}/search`, {})).body.error).toBe('QUERY_REQUIRED');
    expect((await anon().post(`/public/${link.token}/search`, { query: 'x', limit: 51 })).status).toBe(400);
    expect((await anon().post(`/public/${link.token}/search`, { query: 'x', tags: [legal] })).status).toBe(400);
  });

  it('GET /s/:linkId searches with limit 3 by default; unknown ids are 404', async () => {
    const r = await anon().get(`/s/${link.id}?q=refund%20billing%20desk`);
    expect(r.status).toBe(200);
    expect(r.body.results).toHaveLength(3);
    expect(r.body.totalResults).toBe(3);
    expect(r.body.results.map((x: { documentId: string }) => x.documentId)).not.toContain(untaggedDoc);
    expect((await anon().get(`/s/${link.id}?q=refund&limit=5`)).body.results).toHaveLength(5);
    const unknown = await anon().get('/s/00000000-0000-0000-0000-000000000000?q=refund');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ error: 'NOT_FOUND', message: expect.any(String) });
    expect((await anon().get('/s/whatever?q=refund')).status).toBe(404);
  });

  it('unknown and malformed tokens are 404 NOT_FOUND', async () => {
    for (const t of ['0'.repeat(64), 'short', link.token.toUpperCase()]) {
      const r = await anon().get(`/public/${t}/search?q=refund`);
      expect(r.status).toBe(404);
      expect(r.body.error).toBe('NOT_FOUND');
    }
  });

  it('an expired link answers 410 EXPIRED on every public path', async () => {
    const expiring = (await owner.api.post(`/api/workspaces/${ws}/public-links`, { expiresAt: new Date(Date.now() + 1500).toISOString() })).body;
    expect((await anon().get(`/public/${expiring.token}/search?q=refund`)).status).toBe(200);
    await sleep(2000);
    const g = await anon().get(`/public/${expiring.token}/search?q=refund`);
    expect(g.status).toBe(410);
    expect(g.body).toEqual({ error: 'EXPIRED', message: expect.any(String) });
    expect((await anon().post(`/public/${expiring.token}/search`, { query: 'refund' })).status).toBe(410);
    expect((await anon().get(`/s/${expiring.id}?q=refund`)).status).toBe(410);
    const view = await owner.api.get(`/api/workspaces/${ws}/public-links/${expiring.id}`);
    expect(view.body).toMatchObject({ isActive: false, isExpired: true });
  });

  it('a revoked link answers 404 on every public path', async () => {
    const l = (await owner.api.post(`/api/workspaces/${ws}/public-links`, {})).body;
    await owner.api.delete(`/api/workspaces/${ws}/public-links/${l.id}`);
    expect((await anon().get(`/public/${l.token}/search?q=refund`)).status).toBe(404);
    expect((await anon().post(`/public/${l.token}/search`, { query: 'refund' })).status).toBe(404);
    expect((await anon().get(`/s/${l.id}?q=refund`)).status).toBe(404);
  });
});

describe('public search rate limit', () => {
  let server: TestServer;
  afterAll(async () => server?.stop());

  it('30 per minute per link with X-RateLimit headers on every answer, then 429 with Retry-After', async () => {
    server = await startServer({ KB_RATE_LIMITS: 'on' });
    const owner = await signUp(server.url, 'Owner');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Limited' })).body.id;
    const link = (await owner.api.post(`/api/workspaces/${ws}/public-links`, {})).body;
    const other = (await owner.api.post(`/api/workspaces/${ws}/public-links`, {})).body;
    const anon = client(server.url);
    for (let i = 1; i <= 30; i++) {
      const r = i % 2 ? await anon.get(`/public/${link.token}/search?q=q${i}`) : await anon.post(`/public/${link.token}/search`, { query: `q${i}` });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBe('30');
      expect(r.headers.get('x-ratelimit-remaining')).toBe(String(30 - i));
      expect(Number(r.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 - 1);
    }
    const over = await anon.get(`/public/${link.token}/search?q=again`);
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: 'RATE_LIMITED', message: expect.any(String) });
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(over.headers.get('x-ratelimit-remaining')).toBe('0');
    // /s/:linkId shares the link's budget; another link has its own.
    expect((await anon.get(`/s/${link.id}?q=again`)).status).toBe(429);
    expect((await anon.get(`/public/${other.token}/search?q=fine`)).status).toBe(200);
    // Error answers carry the headers too.
    const missing = await anon.get(`/public/${other.token}/search`);
    expect(missing.status).toBe(400);
    expect(missing.headers.get('x-ratelimit-limit')).toBe('30');
  });
});
