import { client, signUp, startServer, TestServer } from '../support/server';

/**
 * Finding 6: a search link's id opens its search (GET /s/<linkId>, decisions.md), so it is a
 * credential: it must never reach the access log, under any prefix or sub-path, nor through
 * the management paths that carry it.
 */
describe('a search link id is a credential: never in the logs', () => {
  let server: TestServer;
  afterAll(async () => server?.stop());

  it('redacts /s/<id> (any prefix, sub-paths) and the link id in management paths', async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'debug' });
    const owner = await signUp(server.url, 'Owner');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Links' })).body.id;
    const link = (await owner.api.post(`/api/workspaces/${ws}/public-links`, { name: 'Leaky' })).body;
    const anon = client(server.url);
    expect((await anon.get(`/s/${link.id}?q=refund`)).status).toBe(200);
    expect((await anon.get(`/api/v1/s/${link.id}?q=refund`)).status).toBe(200);
    await anon.get(`/s/${link.id}/raw`);
    await anon.get(`/v1/s/${link.id}?q=refund`);
    // Upper-case hex is still the same id (the look-up lower-cases it).
    await anon.get(`/s/${link.id.toUpperCase()}?q=refund`);
    await owner.api.get(`/api/workspaces/${ws}/public-links/${link.id}`);
    await owner.api.get(`/api/workspaces/${ws}/public-links/${link.id}/usage`);
    await owner.api.patch(`/api/workspaces/${ws}/public-links/${link.id}`, { name: 'Renamed' });
    await new Promise((r) => setTimeout(r, 300));
    const out = server.output();
    expect(out).toContain('[REDACTED]');
    expect(out.toLowerCase()).not.toContain(link.id.toLowerCase());
    // The rest of the path stays readable for operators.
    expect(out).toContain('/public-links/[REDACTED]/usage');
  });
});

describe('KB_LINK_ID_SEARCH=off: only the token opens a link', () => {
  let server: TestServer;
  afterAll(async () => server?.stop());

  it('/s/<linkId> answers 404 while the token keeps working', async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_LINK_ID_SEARCH: 'off' });
    const owner = await signUp(server.url, 'Owner');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Token only' })).body.id;
    const link = (await owner.api.post(`/api/workspaces/${ws}/public-links`, {})).body;
    const anon = client(server.url);
    const byId = await anon.get(`/s/${link.id}?q=refund`);
    expect(byId.status).toBe(404);
    expect(byId.body).toEqual({ error: 'NOT_FOUND', message: expect.any(String) });
    expect((await anon.get(`/public/${link.token}/search?q=refund`)).status).toBe(200);
  });
});
