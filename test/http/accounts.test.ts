import { client, signUp, startServer, TestServer } from '../support/server';

describe('accounts: register, login, refresh, logout, me, API keys', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_ACCESS_TOKEN_TTL: '2' });
  });
  afterAll(async () => server.stop());

  it('registers, refuses duplicates and bad input', async () => {
    const anon = client(server.url);
    const ok = await anon.post('/v1/auth/register', { email: 'Ada@Example.com', password: 'longenough', name: 'Ada' });
    expect(ok.status).toBe(201);
    expect(ok.body).toEqual({ id: expect.any(String), email: 'ada@example.com', name: 'Ada', createdAt: expect.any(String) });
    expect(ok.body).not.toHaveProperty('passwordHash');
    const dup = await anon.post('/v1/auth/register', { email: 'ada@example.com', password: 'longenough', name: 'Ada 2' });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('EMAIL_TAKEN');
    const short = await anon.post('/v1/auth/register', { email: 'b@example.com', password: 'short', name: 'B' });
    expect(short.status).toBe(400);
    expect(short.body.error.code).toBe('VALIDATION_ERROR');
    const badEmail = await anon.post('/v1/auth/register', { email: 'nope', password: 'longenough', name: 'B' });
    expect(badEmail.status).toBe(400);
    const wrongType = await anon.post('/v1/auth/register', { email: 42, password: ['x'], name: null });
    expect(wrongType.status).toBe(400);
  });

  it('logs in with the right password only', async () => {
    const anon = client(server.url);
    await anon.post('/v1/auth/register', { email: 'login@example.com', password: 'longenough', name: 'L' });
    const ok = await anon.post('/v1/auth/login', { email: 'LOGIN@example.com', password: 'longenough' });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ accessToken: expect.any(String), refreshToken: expect.any(String), expiresIn: 2 });
    const bad = await anon.post('/v1/auth/login', { email: 'login@example.com', password: 'wrong-password' });
    expect(bad.status).toBe(401);
    expect(bad.body.error.code).toBe('INVALID_CREDENTIALS');
    const unknown = await anon.post('/v1/auth/login', { email: 'ghost@example.com', password: 'longenough' });
    expect(unknown.status).toBe(401);
  });

  it('distinguishes missing, invalid and expired tokens', async () => {
    const u = await signUp(server.url, 'Exp');
    const me = await u.api.get('/v1/auth/me');
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ id: u.id, email: u.email, name: 'Exp', emailVerified: false, mfaEnabled: false });
    const missing = await client(server.url).get('/v1/auth/me');
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe('UNAUTHORIZED');
    const invalid = await client(server.url, 'not-a-token').get('/v1/auth/me');
    expect(invalid.body.error.code).toBe('UNAUTHORIZED');
    const forged = await client(server.url, `${u.token.slice(0, -4)}AAAA`).get('/v1/auth/me');
    expect(forged.status).toBe(401);
    await new Promise((r) => setTimeout(r, 3100));
    const expired = await u.api.get('/v1/auth/me');
    expect(expired.status).toBe(401);
    expect(expired.body.error.code).toBe('TOKEN_EXPIRED');
  });

  it('rotates refresh tokens and revokes the family on reuse', async () => {
    const u = await signUp(server.url, 'Rot');
    const anon = client(server.url);
    const r1 = await anon.post('/v1/auth/refresh', { refreshToken: u.refreshToken });
    expect(r1.status).toBe(200);
    expect(r1.body.refreshToken).not.toBe(u.refreshToken);
    expect((await client(server.url, r1.body.accessToken).get('/v1/auth/me')).status).toBe(200);
    // The new token is used; the old one presented again is reuse: the family is revoked, the newest token too.
    const r2 = await anon.post('/v1/auth/refresh', { refreshToken: r1.body.refreshToken });
    expect(r2.status).toBe(200);
    const reuse = await anon.post('/v1/auth/refresh', { refreshToken: u.refreshToken });
    expect(reuse.status).toBe(401);
    expect(reuse.body.error.code).toBe('UNAUTHORIZED');
    const afterReuse = await anon.post('/v1/auth/refresh', { refreshToken: r2.body.refreshToken });
    expect(afterReuse.status).toBe(401);
    expect((await client(server.url, r2.body.accessToken).get('/v1/auth/me')).status).toBe(401);
    const garbage = await anon.post('/v1/auth/refresh', { refreshToken: 'garbage' });
    expect(garbage.status).toBe(401);
  });

  it('an answer lost on its way: the same client presenting the old token again, before the new one is used, gets the same answer; anyone else, or after the new one was used, revokes the session', async () => {
    const anon = client(server.url);
    const u = await signUp(server.url, 'Lost');
    const r1 = await anon.post('/v1/auth/refresh', { refreshToken: u.refreshToken });
    expect(r1.status).toBe(200);
    // The client never saw r1 (a page reloaded meanwhile) and asks again with the token it holds.
    const again = await anon.post('/v1/auth/refresh', { refreshToken: u.refreshToken });
    expect(again.status).toBe(200);
    expect(again.body.refreshToken).toBe(r1.body.refreshToken);
    expect((await client(server.url, again.body.accessToken).get('/v1/auth/me')).status).toBe(200);
    // The new token works once; after that the old one is reuse, from the same client too.
    const r2 = await anon.post('/v1/auth/refresh', { refreshToken: r1.body.refreshToken });
    expect(r2.status).toBe(200);
    expect((await anon.post('/v1/auth/refresh', { refreshToken: u.refreshToken })).status).toBe(401);
    expect((await anon.post('/v1/auth/refresh', { refreshToken: r2.body.refreshToken })).status).toBe(401);

    // Another client (a thief with the old token) gets no second copy: the session is revoked.
    const v = await signUp(server.url, 'Stolen');
    const v1 = await anon.post('/v1/auth/refresh', { refreshToken: v.refreshToken });
    expect(v1.status).toBe(200);
    const thief = await anon.post('/v1/auth/refresh', { refreshToken: v.refreshToken }, { 'user-agent': 'somebody else' });
    expect(thief.status).toBe(401);
    expect((await anon.post('/v1/auth/refresh', { refreshToken: v1.body.refreshToken })).status).toBe(401);
  });

  it('logout ends the session', async () => {
    const u = await signUp(server.url, 'Out');
    const out = await client(server.url).post('/v1/auth/logout', { refreshToken: u.refreshToken });
    expect(out.status).toBe(204);
    expect((await client(server.url).post('/v1/auth/refresh', { refreshToken: u.refreshToken })).status).toBe(401);
    expect((await u.api.get('/v1/auth/me')).status).toBe(401);
  });

  it('API keys: shown once, listed by prefix, usable as bearer, revoked at once', async () => {
    const u = await signUp(server.url, 'Keys');
    const created = await u.api.post('/v1/api-keys', { name: 'ci' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.any(String), name: 'ci', key: expect.stringMatching(/^kb_/), createdAt: expect.any(String) });
    const key = created.body.key as string;
    const viaKey = client(server.url, key);
    expect((await viaKey.get('/v1/auth/me')).body.id).toBe(u.id);
    const ws = await viaKey.post('/v1/workspaces', { name: 'From key' });
    expect(ws.status).toBe(201);
    const list = await u.api.get('/v1/api-keys');
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([{ id: created.body.id, name: 'ci', prefix: key.slice(0, 9), createdAt: expect.any(String), lastUsedAt: expect.any(String) }]);
    expect(JSON.stringify(list.body)).not.toContain(key);
    const other = await signUp(server.url, 'Other');
    expect((await other.api.delete(`/v1/api-keys/${created.body.id}`)).status).toBe(404);
    expect((await u.api.delete(`/v1/api-keys/${created.body.id}`)).status).toBe(204);
    const after = await viaKey.get('/v1/auth/me');
    expect(after.status).toBe(401);
    expect((await u.api.get('/v1/api-keys')).body.data).toEqual([]);
  });
});
