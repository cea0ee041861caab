import { client, signUp, startServer, TestServer } from '../support/server';
import { team, verifiedDoc } from '../http/instructionSets.support';

/**
 * Fifth look at the data plane, as a hostile client.
 */
describe('abuse: a public instruction-set page whose Markdown is pathological', () => {
  let server: TestServer;
  let t: Awaited<ReturnType<typeof team>>;
  const anon = () => client(server.url);

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    t = await team(server.url);
  }, 120_000);
  afterAll(async () => server?.stop());

  /** A public set holding one .md document of this text; answers the set id. */
  async function publicSet(name: string, markdown: string): Promise<string> {
    const d = await verifiedDoc(t.owner.api, t.workspaceId, `${name}.md`, markdown);
    const s = await t.owner.api.post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name, isPublic: true });
    expect(s.status).toBe(201);
    expect((await t.owner.api.post(`/api/instruction-sets/${s.body.id}/documents`, { documentId: d.id })).status).toBe(201);
    return s.body.id as string;
  }

  it("rendering a page never holds the event loop: others' requests are answered meanwhile, and the page still comes", async () => {
    // 100 KB (the set limit) of `_a`: marked's emphasis scan is quadratic in it (~30 s of CPU).
    const id = await publicSet('underscores', 'MARK-U\n\n' + '_a'.repeat(49_000));
    const page = anon().get(`/s/${id}`);
    await new Promise((r) => setTimeout(r, 150));
    const started = Date.now();
    const health = await anon().get('/healthz');
    expect(health.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(1500);
    const p = await page;
    expect(p.status).toBe(200);
    expect(p.headers.get('content-type')).toMatch(/text\/html/);
    expect(p.text).toContain('MARK-U');
    expect(p.text).not.toContain('<script');
  }, 120_000);

  it('deeply nested block quotes (marked overflows its stack) are a page, not a 500', async () => {
    const id = await publicSet('quotes', 'MARK-Q\n\n' + '> '.repeat(20_000) + 'deep');
    const p = await anon().get(`/s/${id}`);
    expect(p.status).toBe(200);
    expect(p.text).toContain('MARK-Q');
    expect(p.text).toContain('deep');
    expect(server.output()).not.toMatch(/RangeError|Maximum call stack/);
  }, 120_000);

  it('the raw text is unaffected and a normal page still renders Markdown', async () => {
    const id = await publicSet('normal', '# Title\n\nSome *emphasis* and <script>alert(1)</script> here.');
    const p = await anon().get(`/s/${id}`);
    expect(p.status).toBe(200);
    expect(p.text).toContain('<em>emphasis</em>');
    expect(p.text).toContain('<h3>Title</h3>');
    expect(p.text).not.toContain('<script>alert');
  }, 60_000);
});

describe('abuse: analytics as of a past time is bounded per workspace and per user, never for the whole server', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(); // rate limits on, as deployed
  }, 120_000);
  afterAll(async () => server?.stop());

  const asOf = (api: Awaited<ReturnType<typeof signUp>>['api'], ws: string) => api.get(`/v1/workspaces/${ws}/analytics?asOf=2020-01-01T00:00:00Z`);
  const workspacesOf = async (user: Awaited<ReturnType<typeof signUp>>, n: number): Promise<string[]> => {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const ws = await user.api.post('/v1/workspaces', { name: `W${i}` });
      expect(ws.status).toBe(201);
      out.push(ws.body.id as string);
    }
    return out;
  };

  it("an ADMIN's asOf answers are limited per workspace and per user (429 RATE_LIMITED in the envelope); live answers are not", async () => {
    const owner = await signUp(server.url, 'Analyst');
    const workspaces = await workspacesOf(owner, 3);
    for (let i = 0; i < 10; i++) expect((await asOf(owner.api, workspaces[0])).status).toBe(200);
    const refused = await asOf(owner.api, workspaces[0]);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('RATE_LIMITED');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // The live answer reads the projection, not the log: not limited.
    expect((await owner.api.get(`/v1/workspaces/${workspaces[0]}/analytics`)).status).toBe(200);
    // Another workspace has its own budget, until the user's (30 an hour; the refused one counted) is spent.
    for (let i = 0; i < 10; i++) expect((await asOf(owner.api, workspaces[1])).status).toBe(200);
    for (let i = 0; i < 9; i++) expect((await asOf(owner.api, workspaces[2])).status).toBe(200);
    const user429 = await asOf(owner.api, workspaces[2]);
    expect(user429.status).toBe(429);
    expect(user429.body.error.code).toBe('RATE_LIMITED');
  }, 120_000);

  it("a tenant that spends 60 asOf answers across many workspaces leaves another tenant's answers alone", async () => {
    // A server of its own: nobody else has spent anything there.
    const fresh = await startServer();
    try {
      await tenants(fresh.url);
    } finally {
      await fresh.stop();
    }
  }, 120_000);

  async function tenants(url: string): Promise<void> {
    // Tenant A: two admins, six workspaces, ten answers each (what was the whole server's hour).
    for (const name of ['TenantA1', 'TenantA2']) {
      const admin = await signUp(url, name);
      for (const ws of await workspacesOf(admin, 3)) for (let i = 0; i < 10; i++) expect((await asOf(admin.api, ws)).status).toBe(200);
    }
    // Tenant B still gets its answers (before: 429 for the rest of the hour).
    const b = await signUp(url, 'TenantB');
    const [wsB] = await workspacesOf(b, 1);
    const answer = await asOf(b.api, wsB);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ workspaceId: wsB, asOf: '2020-01-01T00:00:00.000Z', documents: { added: 0, deleted: 0 } });
  }
});

describe('abuse: tags per document are bounded (the search index copies them onto every chunk)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
  }, 120_000);
  afterAll(async () => server?.stop());

  it('51 distinct tags are refused on update, text creation and upload (400 VALIDATION_ERROR); 50, and repeats, are taken', async () => {
    const owner = await signUp(server.url, 'Tagger');
    const W = (await owner.api.post('/v1/workspaces', { name: 'Tags' })).body.id as string;
    const tags: string[] = [];
    for (let i = 0; i < 51; i++) {
      const r = await owner.api.post(`/v1/workspaces/${W}/tags`, { name: `t${i}`, color: '#112233' });
      expect(r.status).toBe(201);
      tags.push(r.body.id as string);
    }
    const doc = await verifiedDoc(owner.api, W, 'a.md', '# A\n\nalpha');
    const tooMany = await owner.api.put(`/v1/workspaces/${W}/documents/${doc.id}`, { tags });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.code).toBe('VALIDATION_ERROR');
    expect(tooMany.body.error.details).toMatchObject({ maxTags: 50, count: 51 });
    expect((await owner.api.get(`/v1/workspaces/${W}/documents/${doc.id}`)).body.tags).toEqual([]);

    const fifty = await owner.api.put(`/v1/workspaces/${W}/documents/${doc.id}`, { tags: [...tags.slice(0, 50), ...tags.slice(0, 50)] });
    expect(fifty.status).toBe(200);
    expect(fifty.body.tags).toHaveLength(50);

    const text = await owner.api.post(`/v1/workspaces/${W}/documents`, { title: 'x', content: 'hello', format: 'text', tags });
    expect(text.status).toBe(400);
    expect(text.body.error.code).toBe('VALIDATION_ERROR');
    const form = new FormData();
    form.append('tags', JSON.stringify(tags));
    form.append('file', new Blob(['some text']), 'z.txt');
    const uploaded = await owner.api.post(`/v1/workspaces/${W}/documents`, form);
    expect(uploaded.status).toBe(400);
    expect(uploaded.body.error.code).toBe('VALIDATION_ERROR');
    // Nothing of the refused creations was kept.
    expect((await owner.api.get(`/v1/workspaces/${W}/documents`)).body.pagination.total).toBe(1);
  }, 120_000);
});
