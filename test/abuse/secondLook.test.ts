import { client, confirmAddress, signUp, startServer, TestServer } from '../support/server';
import { eventually } from '../support/rawHttp';

/**
 * What a second hostile pass found after the first hardening round: keys minting keys,
 * cacheable and sniffable answers, express's automatic OPTIONS, case-sensitive invitation
 * ids, loose numeric parsing, unbounded list search, a broken link on /s/<id>/, stack
 * traces for expected failures, and writes without a bound per credential.
 */
describe('abuse: second look', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_WRITE_RATE_PER_MINUTE: '40' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('an API key cannot create, list or revoke API keys; a session can', async () => {
    const u = await signUp(server.url, 'Keys');
    const created = await u.api.post('/v1/api-keys', { name: 'ci' });
    expect(created.status).toBe(201);
    const withKey = client(server.url, created.body.key);
    expect((await withKey.get('/v1/workspaces')).status).toBe(200);
    for (const r of [await withKey.post('/v1/api-keys', { name: 'spawn' }), await withKey.get('/v1/api-keys'), await withKey.delete(`/v1/api-keys/${created.body.id}`)]) {
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe('FORBIDDEN');
    }
    expect((await u.api.get('/v1/api-keys')).body.data).toHaveLength(1);
  });

  it('answers are never cached or sniffed; OPTIONS is refused in the envelope', async () => {
    const u = await signUp(server.url, 'Headers');
    const me = await u.api.get('/v1/auth/me');
    expect(me.headers.get('cache-control')).toBe('no-store');
    expect(me.headers.get('x-content-type-options')).toBe('nosniff');
    const login = await client(server.url).post('/v1/auth/login', { email: u.email, password: 'correct horse battery' });
    expect(login.headers.get('cache-control')).toBe('no-store');
    const opt = await client(server.url).raw('OPTIONS', '/v1/workspaces');
    expect(opt.status).toBe(405);
    expect(opt.body.error.code).toBe('METHOD_NOT_ALLOWED');
  });

  it('an invitation id is accepted in any letter case, like every other id', async () => {
    const owner = await signUp(server.url, 'Inviter');
    const invitee = await signUp(server.url, 'Invitee');
    await confirmAddress(server, invitee.email);
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Invites' })).body.id;
    const inv = await owner.api.post(`/v1/workspaces/${ws}/invite`, { email: invitee.email, role: 'MEMBER' });
    expect(inv.status).toBe(201);
    const accepted = await invitee.api.post(`/v1/invitations/${String(inv.body.invitationId).toUpperCase()}/accept`);
    expect(accepted.status).toBe(200);
  });

  it('numbers are numbers and list search is bounded', async () => {
    const owner = await signUp(server.url, 'Numbers');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Numbers' })).body.id;
    for (const limit of ['1e2', '0x10', ' 5']) expect((await owner.api.get(`/v1/workspaces/${ws}/audit?limit=${encodeURIComponent(limit)}`)).status).toBe(400);
    expect((await owner.api.get(`/v1/workspaces/${ws}/audit?limit=5`)).status).toBe(200);
    expect((await owner.api.get(`/v1/workspaces/${ws}/documents?search=${'a'.repeat(201)}`)).status).toBe(400);
    expect((await owner.api.get(`/v1/workspaces/${ws}/documents?search=${'a'.repeat(200)}`)).status).toBe(200);
  });

  it('a public set page addressed with a trailing slash redirects to its canonical address', async () => {
    const owner = await signUp(server.url, 'Pages');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Pages' })).body.id;
    const set = await owner.api.post(`/api/workspaces/${ws}/instruction-sets`, { name: 'Public set', isPublic: true });
    expect(set.status).toBe(201);
    const r = await fetch(`${server.url}/s/${set.body.id}/`, { redirect: 'manual' });
    expect(r.status).toBe(308);
    expect(r.headers.get('location')).toBe(`/s/${set.body.id}`);
    expect((await fetch(`${server.url}/s/${set.body.id}`)).status).toBe(200);
  });

  it('an expected processing failure is logged by its reason, without a stack trace', async () => {
    const owner = await signUp(server.url, 'Empty');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Empty' })).body.id;
    const form = new FormData();
    form.append('file', new Blob(['   \n']), 'empty.md');
    const up = await owner.api.post(`/v1/workspaces/${ws}/documents`, form);
    expect(up.status).toBe(201);
    expect(await eventually(async () => (await owner.api.get(`/v1/documents/${up.body.id}`)).body.processingStatus === 'FAILED', 20_000)).toBe(true);
    const line = server.output().split('\n').find((l) => l.includes('document processing failed') && l.includes(up.body.id));
    expect(line).toBeDefined();
    expect(line).not.toContain('"stack"');
    expect(line).toContain('NO_TEXT');
  });

  it('writes are bounded per credential; another credential is unaffected', async () => {
    const a = await signUp(server.url, 'Writer');
    const b = await signUp(server.url, 'Bystander');
    const ws = (await a.api.post('/v1/workspaces', { name: 'Many tags' })).body.id;
    let limited = 0;
    for (let i = 0; i < 45; i++) {
      const r = await a.api.post(`/v1/workspaces/${ws}/tags`, { name: `tag ${i}` });
      if (r.status === 429) {
        limited++;
        expect(r.body.error.code).toBe('RATE_LIMITED');
        expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
      }
    }
    expect(limited).toBeGreaterThan(0);
    expect((await b.api.post('/v1/workspaces', { name: 'Still fine' })).status).toBe(201);
  });
});
