import { client, confirmAddress, signUp, startServer, TestServer } from '../support/server';
import { base32Decode, totp } from '../../src/security/totp';

/**
 * Authentication and membership reads are remembered between requests (queries/user/authReadCache.ts),
 * forgotten as soon as the projections apply an event that may change them: a revocation, a
 * removal or a demotion is enforced on the very next request, even for a caller whose reads
 * were remembered just before.
 */
describe('remembered authentication: revoked or changed standing is enforced at once', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
  });
  afterAll(async () => server.stop());

  it('a session revoked from another session is refused on its next request', async () => {
    const u = await signUp(server.url, 'Revoked');
    for (let i = 0; i < 3; i++) expect((await u.api.get('/v1/auth/me')).status).toBe(200);
    const login = await client(server.url).post('/v1/auth/login', { email: u.email, password: 'correct horse battery' });
    const other = client(server.url, login.body.accessToken);
    const list = await other.get('/v1/auth/sessions');
    const first = list.body.data.find((s: { current: boolean }) => !s.current);
    expect((await other.delete(`/v1/auth/sessions/${first.id}`)).status).toBe(204);
    const after = await u.api.get('/v1/auth/me');
    expect(after.status).toBe(401);
    expect((await other.get('/v1/auth/me')).status).toBe(200);
  });

  it('a session that logged out is refused on its next request', async () => {
    const u = await signUp(server.url, 'Logout');
    for (let i = 0; i < 3; i++) expect((await u.api.get('/v1/auth/me')).status).toBe(200);
    expect((await client(server.url).post('/v1/auth/logout', { refreshToken: u.refreshToken })).status).toBe(204);
    expect((await u.api.get('/v1/auth/me')).status).toBe(401);
  });

  it('a demoted member loses the role at once; a removed member loses the workspace at once', async () => {
    const owner = await signUp(server.url, 'Owner');
    const member = await signUp(server.url, 'Member');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Standing' })).body.id as string;
    expect((await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: member.id, role: 'ADMIN' })).status).toBe(201);
    // Reads guarded by the HTTP layer's role check alone (the deciders check commands again on their own).
    for (let i = 0; i < 3; i++) {
      expect((await member.api.get(`/v1/workspaces/${ws}/invitations`)).status).toBe(200);
      expect((await member.api.get(`/v1/workspaces/${ws}/members`)).status).toBe(200);
    }
    expect((await owner.api.patch(`/v1/workspaces/${ws}/members/${member.id}`, { role: 'MEMBER' })).status).toBe(200);
    const demoted = await member.api.get(`/v1/workspaces/${ws}/invitations`);
    expect(demoted.status).toBe(403);
    expect(demoted.body.error.code).toBe('FORBIDDEN');
    expect((await member.api.get(`/v1/workspaces/${ws}/members`)).status).toBe(200);
    expect((await owner.api.delete(`/v1/workspaces/${ws}/members/${member.id}`)).status).toBe(204);
    const removed = await member.api.get(`/v1/workspaces/${ws}/members`);
    expect(removed.status).toBe(404);
    expect(removed.body.error.code).toBe('WORKSPACE_NOT_FOUND');
  });

  it('a revoked API key, a deleted workspace, a transferred ownership and a disabled second factor take effect on the next request (hostile look: each after remembered reads)', async () => {
    const owner = await signUp(server.url, 'Owner2');
    const member = await signUp(server.url, 'Member2');
    const created = (await member.api.post('/v1/api-keys', { name: 'ci' })).body;
    const key = client(server.url, created.key);
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Remembered' })).body.id as string;
    expect((await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: member.id, role: 'ADMIN' })).status).toBe(201);
    for (let i = 0; i < 3; i++) expect((await key.get(`/v1/workspaces/${ws}/tags`)).status).toBe(200);
    // Ownership moves to the member: the former owner cannot delete the workspace any more.
    for (let i = 0; i < 3; i++) expect((await owner.api.get(`/v1/workspaces/${ws}/members`)).status).toBe(200);
    expect((await owner.api.post(`/v1/workspaces/${ws}/transfer-ownership`, { userId: member.id })).status).toBe(200);
    expect((await owner.api.delete(`/v1/workspaces/${ws}`)).status).toBe(403);
    // The key is revoked: refused at once, on every route.
    expect((await member.api.delete(`/v1/api-keys/${created.id}`)).status).toBe(204);
    expect((await key.get(`/v1/workspaces/${ws}/tags`)).status).toBe(401);
    expect((await key.get('/v1/auth/me')).status).toBe(401);
    // A second factor disabled under requireMfa: the session is kept out at once.
    await confirmAddress(server, member.email);
    const enrol = await member.api.post('/v1/auth/mfa/totp', {});
    const confirmed = await member.api.post('/v1/auth/mfa/totp/confirm', { code: totp(base32Decode(enrol.body.secret), Date.now() / 1000) });
    expect((await member.api.put(`/v1/workspaces/${ws}`, { settings: { requireMfa: true } })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await member.api.get(`/v1/workspaces/${ws}/tags`)).status).toBe(200);
    expect((await member.api.post('/v1/auth/mfa/totp/disable', { code: confirmed.body.recoveryCodes[0] })).status).toBe(200);
    expect((await member.api.get(`/v1/workspaces/${ws}/tags`)).body.error.code).toBe('MFA_ENROLMENT_REQUIRED');
    // The workspace deleted: its former owner (still a member, by API key: requireMfa leaves keys usable) gets 404 at once.
    const ownerKey = client(server.url, (await owner.api.post('/v1/api-keys', { name: 'ci' })).body.key);
    for (let i = 0; i < 3; i++) expect((await ownerKey.get(`/v1/workspaces/${ws}/members`)).status).toBe(200);
    const newOwnerKey = client(server.url, (await member.api.post('/v1/api-keys', { name: 'ci2' })).body.key);
    expect((await newOwnerKey.delete(`/v1/workspaces/${ws}`)).status).toBe(204);
    expect((await ownerKey.get(`/v1/workspaces/${ws}/members`)).status).toBe(404);
  });
});
