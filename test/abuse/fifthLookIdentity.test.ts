import fs from 'node:fs';
import path from 'node:path';
import { client, confirmAddress, signUp, startServer, TestServer } from '../support/server';

/**
 * A fifth hostile pass over identity, accounts and tenancy: invitations accepted from an
 * address nobody confirmed, and what else it found (each test fails on the code before its fix).
 */
describe('abuse: fifth look (identity)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** The token of the newest `page` link mailed to `to` (quoted-printable undone). */
  async function mailedToken(to: string, page: string): Promise<string> {
    const outbox = path.join(server.dataDir, 'outbox');
    for (let i = 0; i < 200; i++) {
      const files = fs.existsSync(outbox) ? fs.readdirSync(outbox).filter((f) => f.endsWith('.eml')) : [];
      for (const f of files) {
        const raw = fs.readFileSync(path.join(outbox, f), 'utf8');
        if (!raw.includes(`To: ${to}`)) continue;
        const text = raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
        const m = new RegExp(`https?://[^\\s]+/${page}\\?token=[A-Za-z0-9%._-]+`).exec(text);
        if (m) return decodeURIComponent(new URL(m[0]).searchParams.get('token') as string);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no ${page} mail to ${to}`);
  }

  const memberIds = async (owner: { api: ReturnType<typeof client> }, ws: string) => ((await owner.api.get(`/v1/workspaces/${ws}/members`)).body as { userId: string }[]).map((m) => m.userId);

  it('an invitation is accepted by a signed-in user only once their address is confirmed (403 EMAIL_NOT_VERIFIED, nothing recorded)', async () => {
    const owner = await signUp(server.url, 'Owner');
    // Someone registers the invitee's address without owning its mailbox: the account stays unconfirmed.
    const squatter = await signUp(server.url, 'Squatter');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Private' })).body.id as string;
    const inv = (await owner.api.post(`/v1/workspaces/${ws}/invite`, { email: squatter.email, role: 'ADMIN' })).body.invitationId as string;
    const refused = await squatter.api.post(`/v1/invitations/${inv}/accept`, {});
    expect([refused.status, refused.body?.error?.code]).toEqual([403, 'EMAIL_NOT_VERIFIED']);
    expect(refused.text.includes('Private')).toBe(false);
    expect(await memberIds(owner, ws)).not.toContain(squatter.id);
    expect((await squatter.api.get(`/v1/workspaces/${ws}`)).status).toBe(404);
    // Someone else's invitation stays not found, confirmed or not (its existence is not told).
    const other = await signUp(server.url, 'Other');
    expect((await other.api.post(`/v1/invitations/${inv}/accept`, {})).body.error.code).toBe('INVITATION_NOT_FOUND');
    // The invitation still waits; once the address is confirmed (the mailed link), it is accepted.
    await confirmAddress(server, squatter.email);
    const ok = await squatter.api.post(`/v1/invitations/${inv}/accept`, {});
    expect([ok.status, ok.body.id, ok.body.role]).toEqual([200, ws, 'ADMIN']);
    // A newcomer accepting from the mailed link (which proves the mailbox) still joins.
    const newcomer = `newcomer-${Date.now()}@example.com`;
    expect((await owner.api.post(`/v1/workspaces/${ws}/invite`, { email: newcomer, role: 'MEMBER' })).status).toBe(201);
    const joined = await client(server.url).post('/v1/auth/accept-invitation', { token: await mailedToken(newcomer, 'accept-invitation'), name: 'Newcomer', password: 'a good password' });
    expect([joined.status, joined.body.workspaceId, joined.body.user?.emailVerified]).toEqual([201, ws, true]);
  });

  it("the mailbox's owner takes an invitation back from whoever registered the address first: a reset from the mail claims the account, then it is accepted", async () => {
    const owner = await signUp(server.url, 'Owner');
    const squatter = await signUp(server.url, 'Early');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Claimed' })).body.id as string;
    const inv = (await owner.api.post(`/v1/workspaces/${ws}/invite`, { email: squatter.email, role: 'MEMBER' })).body.invitationId as string;
    // The newcomer's mailed link says the address has an account.
    const newcomer = await client(server.url).post('/v1/auth/accept-invitation', { token: await mailedToken(squatter.email, 'accept-invitation'), name: 'Real', password: 'the real password' });
    expect([newcomer.status, newcomer.body.error?.code]).toEqual([409, 'EMAIL_TAKEN']);
    expect((await squatter.api.post(`/v1/invitations/${inv}/accept`, {})).body.error.code).toBe('EMAIL_NOT_VERIFIED');
    // The mailbox's owner resets the password from the mail: the address is confirmed, the squatter signed out.
    expect((await client(server.url).post('/v1/auth/forgot-password', { email: squatter.email })).status).toBe(202);
    const reset = await client(server.url).post('/v1/auth/reset-password', { token: await mailedToken(squatter.email, 'reset-password'), password: 'the real password' });
    expect(reset.status).toBe(200);
    expect((await squatter.api.get('/v1/auth/me')).status).toBe(401);
    const real = await client(server.url).post('/v1/auth/login', { email: squatter.email, password: 'the real password' });
    const ok = await client(server.url, real.body.accessToken).post(`/v1/invitations/${inv}/accept`, {});
    expect([ok.status, ok.body.id]).toEqual([200, ws]);
  });

  it('a leaked API key cannot sign its owner out (of every session, or of one): sessions are managed from a session', async () => {
    const owner = await signUp(server.url, 'KeyOwner');
    const key = (await owner.api.post('/v1/api-keys', { name: 'leaks' })).body.key as string;
    const thief = client(server.url, key);
    const mine = ((await owner.api.get('/v1/auth/sessions')).body.data as { id: string; current: boolean }[]).find((s) => s.current)!;
    for (const r of [await thief.delete('/v1/auth/sessions'), await thief.delete(`/v1/auth/sessions/${mine.id}`)]) {
      expect([r.status, r.body?.error?.code]).toEqual([403, 'FORBIDDEN']);
    }
    // The owner is still signed in, and revokes the key.
    expect((await owner.api.get('/v1/auth/me')).status).toBe(200);
    const keyId = ((await owner.api.get('/v1/api-keys')).body.data as { id: string }[])[0].id;
    expect((await owner.api.delete(`/v1/api-keys/${keyId}`)).status).toBe(204);
    expect((await thief.get('/v1/auth/me')).status).toBe(401);
    // From a session, both still work.
    const second = await client(server.url).post('/v1/auth/login', { email: owner.email, password: 'correct horse battery' });
    expect((await owner.api.delete('/v1/auth/sessions')).body).toEqual({ revoked: 1 });
    expect((await client(server.url, second.body.accessToken).get('/v1/auth/me')).status).toBe(401);
  });
});

describe('abuse: fifth look (identity), with limits on', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_WRITE_RATE_PER_MINUTE: '6' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("the per-credential write limit follows the credential, not the header's spelling: scheme case, extra spaces, refreshed tokens and made-up headers get no fresh budget", async () => {
    const u = await signUp(server.url, 'Writer');
    const key = (await u.api.post('/v1/api-keys', { name: 'ci' })).body.key as string;
    const write = (authorization?: string) => client(server.url).post('/v1/workspaces', { name: 'w' }, authorization ? { authorization } : {});
    let spent = 0;
    while ((await write(`Bearer ${u.token}`)).status !== 429) expect(++spent).toBeLessThanOrEqual(6);
    for (const spelling of ['bearer', 'BEARER', 'Bearer ', 'Bearer  ', 'Bearer\t']) {
      const r = await write(`${spelling} ${u.token}`);
      expect([spelling, r.status, r.body?.error?.code]).toEqual([spelling, 429, 'RATE_LIMITED']);
    }
    // A token the session is refreshed to is the same credential.
    const refreshed = await client(server.url).post('/v1/auth/refresh', { refreshToken: u.refreshToken });
    expect(refreshed.status).toBe(200);
    expect((await write(`Bearer ${refreshed.body.accessToken}`)).status).toBe(429);
    // Another credential (the user's API key) has its own budget.
    expect((await write(`Bearer ${key}`)).status).toBe(201);
    // Without a valid credential the client IP counts, whatever header is made up.
    const anon = (authorization?: string) => client(server.url).post('/v1/auth/logout', { refreshToken: 'not-a-token' }, authorization ? { authorization } : {});
    let anonSpent = 0;
    while ((await anon()).status !== 429) expect(++anonSpent).toBeLessThanOrEqual(6);
    for (const made of ['Bearer made-up-1', 'Bearer kb_made-up-2', 'Basic Zm9vOmJhcg==']) expect((await anon(made)).status).toBe(429);
  });
});
