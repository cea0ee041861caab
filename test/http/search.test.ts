import { client, signUp, startServer, TestServer } from '../support/server';

type Api = ReturnType<typeof client>;

async function upload(api: Api, ws: string, name: string, text: string, fields: Record<string, string> = {}): Promise<string> {
  const fd = new FormData();
  fd.append('file', new Blob([text]), name);
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  const r = await api.post(`/v1/workspaces/${ws}/documents`, fd);
  if (r.status !== 201) throw new Error(`upload ${r.status} ${r.text}`);
  return r.body.id;
}

async function verified(api: Api, ws: string, id: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const r = await api.get(`/v1/workspaces/${ws}/documents/${id}`);
    if (r.body.processingStatus === 'VERIFIED') return;
    if (r.body.processingStatus === 'FAILED') throw new Error(`processing failed: ${r.text}`);
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('document never VERIFIED');
}

const sentence = (i: number) => `Section ${i}: warehouse returns are inspected, logged and restocked by the logistics team on shift ${i}. `;

describe('POST /v1/workspaces/:id/search', () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUp>>;
  let ws: string;
  let billing: string;
  let refundsDoc: string;
  let holidaysDoc: string;
  let manualDoc: string;
  let instructionDoc: string;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    owner = await signUp(server.url, 'Owner');
    ws = (await owner.api.post('/v1/workspaces', { name: 'Search' })).body.id;
    billing = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'Billing', color: '#112233' })).body.id;
    refundsDoc = await upload(owner.api, ws, 'refunds.txt', 'Refunds are paid back to the original card within five business days after we receive the returned item.', {
      tags: JSON.stringify([billing]),
      title: 'Refund policy',
    });
    holidaysDoc = await upload(owner.api, ws, 'holidays.txt', 'Employees get twenty-five days of paid holiday per year, plus public holidays.');
    manualDoc = await upload(owner.api, ws, 'manual.txt', Array.from({ length: 120 }, (_, i) => sentence(i)).join(''));
    instructionDoc = await upload(owner.api, ws, 'tone.md', '# Tone\n\nAlways answer refund questions politely and briefly.', { purpose: 'INSTRUCTION' });
    for (const d of [refundsDoc, holidaysDoc, manualDoc, instructionDoc]) await verified(owner.api, ws, d);
  });
  afterAll(async () => server?.stop());

  it('answers query, ranked results with every field, and processingTime', async () => {
    const r = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'when is my refund paid back to my card' });
    expect(r.status).toBe(200);
    expect(r.body.query).toBe('when is my refund paid back to my card');
    expect(typeof r.body.processingTime).toBe('number');
    expect(r.body.processingTime).toBeGreaterThanOrEqual(0);
    const top = r.body.results[0];
    expect(top).toEqual({ documentId: refundsDoc, documentTitle: 'Refund policy', content: expect.stringContaining('Refunds are paid back'), score: expect.any(Number), chunkIndex: 0, metadata: {} });
    const scores = r.body.results.map((x: { score: number }) => x.score);
    for (const s of scores) expect(s >= 0 && s <= 1).toBe(true);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
  });

  it('returns 5 results by default and up to limit (max 20)', async () => {
    const d = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'warehouse returns logistics shift' });
    expect(d.body.results).toHaveLength(5);
    const m = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'warehouse returns logistics shift', limit: 20 });
    expect(m.body.results.length).toBeGreaterThan(5);
    expect(m.body.results.length).toBeLessThanOrEqual(20);
    const one = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'warehouse returns', limit: 1 });
    expect(one.body.results).toHaveLength(1);
  });

  it.each([0, 21, -1, 2.5, '5'])('limit %p is 400 VALIDATION_ERROR', async (limit) => {
    const r = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'refund', limit });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('VALIDATION_ERROR');
  });

  it('a missing or blank query is 400 QUERY_REQUIRED', async () => {
    for (const body of [{}, { query: '' }, { query: '   ' }, { query: null }]) {
      const r = await owner.api.post(`/v1/workspaces/${ws}/search`, body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('QUERY_REQUIRED');
    }
  });

  it('a query over 1000 characters is 400 QUERY_TOO_LONG; 1000 is fine', async () => {
    const long = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'r'.repeat(1001) });
    expect(long.status).toBe(400);
    expect(long.body.error.code).toBe('QUERY_TOO_LONG');
    const max = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'r'.repeat(1000) });
    expect(max.status).toBe(200);
  });

  it('filters by tags, purpose and documentIds', async () => {
    const byTag = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'refund holiday warehouse', limit: 20, filters: { tags: [billing] } });
    expect(new Set(byTag.body.results.map((x: { documentId: string }) => x.documentId))).toEqual(new Set([refundsDoc]));
    const byPurpose = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'refund questions', limit: 20, filters: { purpose: 'INSTRUCTION' } });
    expect(new Set(byPurpose.body.results.map((x: { documentId: string }) => x.documentId))).toEqual(new Set([instructionDoc]));
    const byIds = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'refund holiday', limit: 20, filters: { documentIds: [holidaysDoc] } });
    expect(new Set(byIds.body.results.map((x: { documentId: string }) => x.documentId))).toEqual(new Set([holidaysDoc]));
    const bad = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'refund', filters: { purpose: 'OTHER' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');
  });

  it('a deleted document leaves the results', async () => {
    const id = await upload(owner.api, ws, 'gone.txt', 'Zebras migrate across the savanna every spring.');
    await verified(owner.api, ws, id);
    const before = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'zebra migration savanna' });
    expect(before.body.results[0].documentId).toBe(id);
    expect((await owner.api.delete(`/v1/workspaces/${ws}/documents/${id}`)).status).toBe(204);
    let ids: string[] = [id];
    for (let i = 0; i < 50 && ids.includes(id); i++) {
      ids = (await owner.api.post(`/v1/workspaces/${ws}/search`, { query: 'zebra migration savanna' })).body.results.map((x: { documentId: string }) => x.documentId);
      if (ids.includes(id)) await new Promise((r) => setTimeout(r, 100));
    }
    expect(ids).not.toContain(id);
  });

  it('non-members get 404 WORKSPACE_NOT_FOUND; no token 401', async () => {
    const stranger = await signUp(server.url, 'Stranger');
    const r = await stranger.api.post(`/v1/workspaces/${ws}/search`, { query: 'refund' });
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('WORKSPACE_NOT_FOUND');
    expect((await client(server.url).post(`/v1/workspaces/${ws}/search`, { query: 'refund' })).status).toBe(401);
    expect((await owner.api.post('/v1/workspaces/not-a-uuid/search', { query: 'refund' })).status).toBe(404);
  });

  it('members may search, and /api/v1 is the same route', async () => {
    const member = await signUp(server.url, 'Member');
    await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: member.id, role: 'MEMBER' });
    const r = await member.api.post(`/api/v1/workspaces/${ws}/search`, { query: 'refund' });
    expect(r.status).toBe(200);
    expect(r.body.results.length).toBeGreaterThan(0);
  });
});

describe('workspace search rate limit', () => {
  let server: TestServer;
  afterAll(async () => server?.stop());

  it('allows 60 searches per minute per user, then 429 RATE_LIMITED with headers', async () => {
    server = await startServer({ KB_RATE_LIMITS: 'on' });
    const u = await signUp(server.url, 'Busy');
    const ws = (await u.api.post('/v1/workspaces', { name: 'Busy' })).body.id;
    let last;
    for (let i = 0; i < 60; i++) {
      last = await u.api.post(`/v1/workspaces/${ws}/search`, { query: `question ${i}` });
      expect(last.status).toBe(200);
    }
    expect(last!.headers.get('x-ratelimit-limit')).toBe('60');
    expect(last!.headers.get('x-ratelimit-remaining')).toBe('0');
    const over = await u.api.post(`/v1/workspaces/${ws}/search`, { query: 'one more' });
    expect(over.status).toBe(429);
    expect(over.body.error.code).toBe('RATE_LIMITED');
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(over.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 - 1);
    // Another user has their own budget.
    const other = await signUp(server.url, 'Other');
    const ws2 = (await other.api.post('/v1/workspaces', { name: 'Other' })).body.id;
    expect((await other.api.post(`/v1/workspaces/${ws2}/search`, { query: 'hello' })).status).toBe(200);
  });
});
