import fs from 'node:fs';
import path from 'node:path';
import { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { client, confirmAddress, startServer, TestServer } from '../support/server';
import { base32Decode, totp } from '../../src/security/totp';

interface Delivered {
  to: string[];
  raw: string;
}

/** Decode a quoted-printable body (soft line breaks and =XX escapes). */
const unQp = (s: string) => s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
const linkIn = (raw: string, page: string): string => {
  const m = new RegExp(`https?://[^\\s]+/${page}\\?token=[A-Za-z0-9%._-]+`).exec(unQp(raw));
  if (!m) throw new Error(`no ${page} link in:\n${raw}`);
  return m[0];
};
const tokenOf = (link: string) => decodeURIComponent(new URL(link).searchParams.get('token') as string);

async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function registerOn(url: string, email: string, password = 'correct horse battery') {
  const anon = client(url);
  const reg = await anon.post('/v1/auth/register', { email, password, name: 'Ida' });
  expect(reg.status).toBe(201);
  const login = await anon.post('/v1/auth/login', { email, password }, { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0' });
  expect(login.status).toBe(200);
  return { id: reg.body.id as string, api: client(url, login.body.accessToken), refreshToken: login.body.refreshToken as string, accessToken: login.body.accessToken as string };
}


describe('identity over SMTP: verification and password reset', () => {
  const inbox: Delivered[] = [];
  let smtp: SMTPServer;
  let server: TestServer;
  const mailTo = (email: string, subject: RegExp) => () => inbox.find((m) => m.to.includes(email) && subject.test(m.raw));

  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, session, cb) {
        let raw = '';
        stream.on('data', (d: Buffer) => (raw += d.toString()));
        stream.on('end', () => {
          inbox.push({ to: session.envelope.rcptTo.map((r) => r.address), raw });
          cb();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    const port = (smtp.server.address() as AddressInfo).port;
    server = await startServer({
      KB_SMTP_URL: `smtp://127.0.0.1:${port}`,
      KB_MAIL_FROM: 'KB <kb@example.com>',
      KB_APP_URL: 'https://app.example.com',
      KB_FORGOT_PASSWORD_PER_EMAIL_PER_HOUR: '2',
    });
  }, 60_000);
  afterAll(async () => {
    await server.stop();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
  });

  const register = (email: string) => registerOn(server.url, email);

  it('verification: the mail arrives over SMTP, its link verifies once, /me says so', async () => {
    const u = await register('verify@example.com');
    expect((await u.api.get('/v1/auth/me')).body.emailVerified).toBe(false);
    const mail = await waitFor('verification mail', mailTo('verify@example.com', /Subject: Confirm your e-mail address/));
    expect(mail.raw).toMatch(/^From: KB <kb@example\.com>/m);
    const link = linkIn(mail.raw, 'verify-email');
    expect(link.startsWith('https://app.example.com/verify-email?token=')).toBe(true);
    const anon = client(server.url);
    const forged = await anon.post('/v1/auth/verify-email', { token: `${tokenOf(link).slice(0, -3)}xyz` });
    expect(forged.status).toBe(400);
    expect(forged.body.error.code).toBe('INVALID_TOKEN');
    const ok = await anon.post('/v1/auth/verify-email', { token: tokenOf(link) });
    expect(ok.status).toBe(200);
    expect((await u.api.get('/v1/auth/me')).body).toMatchObject({ emailVerified: true, mfaEnabled: false });
    const trail = await u.api.get('/v1/auth/security-events');
    expect(trail.body.data.map((e: { action: string }) => e.action)).toEqual(expect.arrayContaining(['UserRegistered', 'EmailVerificationRequested', 'EmailVerified', 'SessionStarted']));
    const again = await anon.post('/v1/auth/verify-email', { token: tokenOf(link) });
    expect(again.status).toBe(400);
    expect(again.body.error.code).toBe('INVALID_TOKEN');
    expect((await anon.post('/v1/auth/verify-email', { token: 42 })).status).toBe(400);
    // Already verified: nothing is sent.
    const resend = await u.api.post('/v1/auth/resend-verification', {});
    expect(resend.status).toBe(202);
    expect(resend.body).toEqual({ emailVerified: true, sent: false });
  });

  it('resend-verification sends a new link and is rate-limited per account', async () => {
    const u = await register('resend@example.com');
    await waitFor('first mail', mailTo('resend@example.com', /Confirm your/));
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await u.api.post('/v1/auth/resend-verification', {})).status);
    expect(statuses).toEqual([202, 202, 202, 429]);
    await waitFor('resent mails', () => (inbox.filter((m) => m.to.includes('resend@example.com')).length >= 4 ? true : undefined));
    expect((await client(server.url).post('/v1/auth/resend-verification', {})).status).toBe(401);
  });

  it('password reset: same answer for unknown addresses, single-use link, every session revoked', async () => {
    const u = await register('reset@example.com');
    const other = await client(server.url).post('/v1/auth/login', { email: 'reset@example.com', password: 'correct horse battery' });
    const anon = client(server.url);
    const known = await anon.post('/v1/auth/forgot-password', { email: 'Reset@Example.com' });
    const unknown = await anon.post('/v1/auth/forgot-password', { email: 'nobody@example.com' });
    expect(known.status).toBe(202);
    expect(unknown.status).toBe(202);
    expect(unknown.body).toEqual(known.body);
    const mail = await waitFor('reset mail', mailTo('reset@example.com', /Subject: Reset your password/));
    const token = tokenOf(linkIn(mail.raw, 'reset-password'));
    expect(inbox.some((m) => m.to.includes('nobody@example.com'))).toBe(false);

    const weak = await anon.post('/v1/auth/reset-password', { token, password: 'short' });
    expect(weak.status).toBe(400);
    const ok = await anon.post('/v1/auth/reset-password', { token, password: 'a brand new password' });
    expect(ok.status).toBe(200);
    // Every session ended: access tokens and refresh tokens alike.
    expect((await u.api.get('/v1/auth/me')).status).toBe(401);
    expect((await client(server.url, other.body.accessToken).get('/v1/auth/me')).status).toBe(401);
    expect((await anon.post('/v1/auth/refresh', { refreshToken: u.refreshToken })).status).toBe(401);
    expect((await anon.post('/v1/auth/login', { email: 'reset@example.com', password: 'correct horse battery' })).status).toBe(401);
    expect((await anon.post('/v1/auth/login', { email: 'reset@example.com', password: 'a brand new password' })).status).toBe(200);
    const reuse = await anon.post('/v1/auth/reset-password', { token, password: 'yet another password' });
    expect(reuse.status).toBe(400);
    expect(reuse.body.error.code).toBe('INVALID_TOKEN');
    // Per-address limit (2 per hour here), whether or not the address exists.
    expect((await anon.post('/v1/auth/forgot-password', { email: 'reset@example.com' })).status).toBe(202);
    expect((await anon.post('/v1/auth/forgot-password', { email: 'reset@example.com' })).status).toBe(429);
    expect((await anon.post('/v1/auth/forgot-password', { email: 'nobody@example.com' })).status).toBe(202);
    expect((await anon.post('/v1/auth/forgot-password', { email: 'nobody@example.com' })).status).toBe(429);
  });


  it('an invitation mail lets someone without an account join in one step (account pre-verified, membership, session)', async () => {
    const owner = await register('inviter@example.com');
    const ws = await owner.api.post('/v1/workspaces', { name: 'Invited' });
    const inv = await owner.api.post(`/v1/workspaces/${ws.body.id}/invite`, { email: 'Newcomer@Example.com', role: 'MEMBER' });
    expect(inv.status).toBe(201);
    const mail = await waitFor('invitation mail', mailTo('newcomer@example.com', /Subject: You are invited/));
    const token = tokenOf(linkIn(mail.raw, 'accept-invitation'));
    const anon = client(server.url);
    expect((await anon.post('/v1/auth/accept-invitation', { token: `${token}x`, name: 'New', password: 'a good password' })).body.error.code).toBe('INVALID_TOKEN');
    const joined = await anon.post('/v1/auth/accept-invitation', { token, name: 'New', password: 'a good password' });
    expect(joined.status).toBe(201);
    expect(joined.body).toMatchObject({ user: { email: 'newcomer@example.com', emailVerified: true }, workspaceId: ws.body.id });
    const api = client(server.url, joined.body.accessToken);
    expect((await api.get('/v1/auth/me')).body).toMatchObject({ email: 'newcomer@example.com', emailVerified: true });
    const seen = await api.get(`/v1/workspaces/${ws.body.id}`);
    expect(seen.status).toBe(200);
    const again = await anon.post('/v1/auth/accept-invitation', { token, name: 'New', password: 'a good password' });
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('INVITATION_NOT_FOUND');
    // Someone who has an account is told to sign in and accept.
    await register('member-already@example.com');
    await owner.api.post(`/v1/workspaces/${ws.body.id}/invite`, { email: 'member-already@example.com', role: 'MEMBER' });
    const m2 = await waitFor('second invitation', mailTo('member-already@example.com', /Subject: You are invited/));
    const taken = await anon.post('/v1/auth/accept-invitation', { token: tokenOf(linkIn(m2.raw, 'accept-invitation')), name: 'X', password: 'a good password' });
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('EMAIL_TAKEN');
  });


  it('a mail the SMTP server could not take is not lost: after a crash and restart it is sent, once', async () => {
    const closed = new SMTPServer({ logger: false });
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadPort = (closed.server.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const down = await startServer({ KB_SMTP_URL: `smtp://127.0.0.1:${deadPort}`, KB_SMTP_TIMEOUT_MS: '1000', KB_RATE_LIMITS: 'off' });
    expect((await client(down.url).post('/v1/auth/register', { email: 'crash@example.com', password: 'correct horse battery', name: 'C' })).status).toBe(201);
    await waitFor('a failed send', () => (/identity mailer failed/.test(down.output()) ? true : undefined));
    await down.crash();
    const up = await startServer({ KB_SMTP_URL: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`, KB_RATE_LIMITS: 'off' }, down.dataDir);
    try {
      await waitFor('the mail after restart', mailTo('crash@example.com', /Confirm your/));
      await new Promise((r) => setTimeout(r, 1000));
      expect(inbox.filter((m) => m.to.includes('crash@example.com'))).toHaveLength(1);
    } finally {
      await up.stop();
    }
  });

  it('the security trail shows verification and reset; no token or seed reaches the log files or the server output', async () => {
    const login = await client(server.url).post('/v1/auth/login', { email: 'reset@example.com', password: 'a brand new password' });
    const trail = await client(server.url, login.body.accessToken).get('/v1/auth/security-events');
    const actions = trail.body.data.map((e: { action: string }) => e.action);
    for (const a of ['PasswordResetRequested', 'PasswordReset', 'SessionRevoked']) expect(actions).toContain(a);
    expect(trail.body.data.find((e: { action: string; summary: { reason?: string } }) => e.action === 'SessionRevoked').summary.reason).toBe('password_reset');
    const log = fs.readFileSync(path.join(server.dataDir, 'events.db')).toString('latin1') + server.output();
    const tokens = inbox.flatMap((m) => [...unQp(m.raw).matchAll(/token=([A-Za-z0-9%._-]+)/g)].map((x) => decodeURIComponent(x[1])));
    expect(tokens.length).toBeGreaterThan(3);
    for (const t of tokens) {
      expect(log).not.toContain(t);
      expect(log).not.toContain(t.split('.')[2]);
    }
  });
});

describe('identity with the outbox (embedded default): outbox, sessions, TOTP', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
  });
  afterAll(async () => server.stop());

  it('single sign-on answers 404 SSO_NOT_CONFIGURED without KB_OIDC_ISSUER', async () => {
    const r = await client(server.url).get('/v1/auth/oidc/start');
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('SSO_NOT_CONFIGURED');
  });

  it('writes one .eml per message and logs the link without its token', async () => {
    const anon = client(server.url);
    const reg = await anon.post('/v1/auth/register', { email: 'outbox@example.com', password: 'correct horse battery', name: 'O' });
    expect(reg.status).toBe(201);
    const dir = path.join(server.dataDir, 'outbox');
    const file = await waitFor('an .eml file', () => (fs.existsSync(dir) ? fs.readdirSync(dir).find((f) => f.endsWith('.eml')) : undefined));
    const raw = fs.readFileSync(path.join(dir, file), 'utf8');
    expect(raw).toMatch(/^To: outbox@example\.com/m);
    expect(raw).toMatch(/^Message-ID: <[0-9a-f-]+@kb\.local>/im);
    const link = linkIn(raw, 'verify-email');
    await waitFor('the log line', () => (/"msg":"mail sent"/.test(server.output()) ? true : undefined));
    expect(server.output()).toContain('verify-email?token=<redacted>');
    expect(server.output()).not.toContain(tokenOf(link));
    const ok = await anon.post('/v1/auth/verify-email', { token: tokenOf(link) });
    expect(ok.status).toBe(200);
    // A restart does not send it again (the sent id is recorded).
    await server.stop();
    server = await startServer({ KB_RATE_LIMITS: 'off' }, server.dataDir);
    await new Promise((r) => setTimeout(r, 500));
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.eml'))).toHaveLength(1);
  });

  const register = (email: string) => registerOn(server.url, email);

  it('sessions: listed with device and IP hash, one revoked, then all others', async () => {
    const u = await register('sessions@example.com');
    const anon = client(server.url);
    const second = await anon.post('/v1/auth/login', { email: 'sessions@example.com', password: 'correct horse battery' }, { 'user-agent': 'curl/8.4.0' });
    const third = await anon.post('/v1/auth/login', { email: 'sessions@example.com', password: 'correct horse battery' }, { 'user-agent': 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile/15E148 Safari/604.1' });
    const list = await u.api.get('/v1/auth/sessions');
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(3);
    expect(list.body.data.map((s: { device: string }) => s.device).sort()).toEqual(['Firefox on Linux', 'Safari on iOS', 'curl']);
    for (const s of list.body.data) {
      expect(s).toEqual({ id: expect.any(String), device: expect.any(String), createdAt: expect.any(String), lastUsedAt: expect.any(String), ipHash: expect.stringMatching(/^[0-9a-f]{32}$/), expiresAt: expect.any(String), current: expect.any(Boolean) });
      expect(s.ipHash).not.toContain('127.0.0.1');
    }
    expect(list.body.data.filter((s: { current: boolean }) => s.current)).toHaveLength(1);
    const curlSession = list.body.data.find((s: { device: string }) => s.device === 'curl');
    expect((await u.api.delete(`/v1/auth/sessions/${curlSession.id}`)).status).toBe(204);
    expect((await client(server.url, second.body.accessToken).get('/v1/auth/me')).status).toBe(401);
    // Another user's session is not found; a non-id too.
    const stranger = await register('stranger@example.com');
    const foreign = await stranger.api.delete(`/v1/auth/sessions/${list.body.data.find((s: { current: boolean }) => s.current).id}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('SESSION_NOT_FOUND');
    expect((await stranger.api.delete('/v1/auth/sessions/not-an-id')).status).toBe(404);
    const others = await u.api.delete('/v1/auth/sessions');
    expect(others.status).toBe(200);
    expect(others.body.revoked).toBe(1);
    expect((await client(server.url, third.body.accessToken).get('/v1/auth/me')).status).toBe(401);
    expect((await u.api.get('/v1/auth/me')).status).toBe(200);
    expect((await u.api.get('/v1/auth/sessions')).body.data).toHaveLength(1);
  });


  it('workspace settings requireVerifiedEmail and requireMfa keep out members who do not meet them (API keys stay usable)', async () => {
    const owner = await register('ws-owner@example.com');
    const member = await register('ws-member@example.com');
    const ws = await owner.api.post('/v1/workspaces', { name: 'Regulated' });
    expect(ws.status).toBe(201);
    const wsId = ws.body.id as string;
    expect((await owner.api.post(`/v1/workspaces/${wsId}/members`, { userId: member.id, role: 'MEMBER' })).status).toBe(201);
    // The owner must meet a requirement before imposing it.
    const early = await owner.api.put(`/v1/workspaces/${wsId}`, { settings: { requireVerifiedEmail: true } });
    expect(early.status).toBe(403);
    expect(early.body.error.code).toBe('EMAIL_NOT_VERIFIED');
    const dir = path.join(server.dataDir, 'outbox');
    const verifyFrom = async (email: string) => {
      const raw = await waitFor(`mail to ${email}`, () => fs.readdirSync(dir).map((f) => fs.readFileSync(path.join(dir, f), 'utf8')).find((r) => r.includes(`To: ${email}`)));
      expect((await client(server.url).post('/v1/auth/verify-email', { token: tokenOf(linkIn(raw, 'verify-email')) })).status).toBe(200);
    };
    await verifyFrom('ws-owner@example.com');
    expect((await owner.api.put(`/v1/workspaces/${wsId}`, { settings: { requireVerifiedEmail: true } })).status).toBe(200);
    const blocked = await member.api.get(`/v1/workspaces/${wsId}`);
    expect(blocked.status).toBe(403);
    expect(blocked.body.error.code).toBe('EMAIL_NOT_VERIFIED');
    await verifyFrom('ws-member@example.com');
    expect((await member.api.get(`/v1/workspaces/${wsId}`)).status).toBe(200);

    expect((await owner.api.put(`/v1/workspaces/${wsId}`, { settings: { requireMfa: true } })).body.error.code).toBe('MFA_ENROLMENT_REQUIRED');
    const enrol = await owner.api.post('/v1/auth/mfa/totp', {});
    expect((await owner.api.post('/v1/auth/mfa/totp/confirm', { code: totp(base32Decode(enrol.body.secret), Date.now() / 1000) })).status).toBe(200);
    expect((await owner.api.put(`/v1/workspaces/${wsId}`, { settings: { requireMfa: true } })).status).toBe(200);
    const key = await member.api.post('/v1/api-keys', { name: 'ci' });
    const noMfa = await member.api.get(`/v1/workspaces/${wsId}`);
    expect(noMfa.status).toBe(403);
    expect(noMfa.body.error.code).toBe('MFA_ENROLMENT_REQUIRED');
    expect((await client(server.url, key.body.key).get(`/v1/workspaces/${wsId}`)).status).toBe(200);
    expect((await owner.api.get(`/v1/workspaces/${wsId}`)).status).toBe(200);
    expect((await owner.api.put(`/v1/workspaces/${wsId}`, { settings: { requireMfaX: true } })).status).toBe(400);
  });

  it('GET /v1/workspaces leaves out a workspace whose requireVerifiedEmail / requireMfa the caller does not meet, says so in KB-Workspaces-Withheld, and lists it once they meet it', async () => {
    const owner = await register('list-owner@example.com');
    const member = await register('list-member@example.com');
    const dir = path.join(server.dataDir, 'outbox');
    const verifyFrom = async (email: string) => {
      const raw = await waitFor(`mail to ${email}`, () => fs.readdirSync(dir).map((f) => fs.readFileSync(path.join(dir, f), 'utf8')).find((r) => r.includes(`To: ${email}`)));
      expect((await client(server.url).post('/v1/auth/verify-email', { token: tokenOf(linkIn(raw, 'verify-email')) })).status).toBe(200);
    };
    const names = async (api: typeof member.api) => {
      const r = await api.get('/v1/workspaces');
      expect(r.status).toBe(200);
      return { names: (r.body as { name: string }[]).map((w) => w.name), withheld: r.headers.get('kb-workspaces-withheld'), reasons: r.headers.get('kb-workspaces-withheld-reasons') };
    };
    await verifyFrom('list-owner@example.com');
    const enrol = await owner.api.post('/v1/auth/mfa/totp', {});
    expect((await owner.api.post('/v1/auth/mfa/totp/confirm', { code: totp(base32Decode(enrol.body.secret), Date.now() / 1000) })).status).toBe(200);
    const open = (await owner.api.post('/v1/workspaces', { name: 'Open' })).body.id as string;
    const verified = (await owner.api.post('/v1/workspaces', { name: 'Needs verified e-mail' })).body.id as string;
    const mfa = (await owner.api.post('/v1/workspaces', { name: 'Needs MFA' })).body.id as string;
    for (const id of [open, verified, mfa]) expect((await owner.api.post(`/v1/workspaces/${id}/members`, { userId: member.id, role: 'MEMBER' })).status).toBe(201);
    // Before any requirement: all three, nothing withheld.
    expect(await names(member.api)).toEqual({ names: ['Open', 'Needs verified e-mail', 'Needs MFA'], withheld: '0', reasons: null });
    expect((await owner.api.put(`/v1/workspaces/${verified}`, { settings: { requireVerifiedEmail: true } })).status).toBe(200);
    expect((await owner.api.put(`/v1/workspaces/${mfa}`, { settings: { requireMfa: true } })).status).toBe(200);

    // The member meets neither: only the open workspace is listed (its name and counts leaked before), and the header says why.
    expect(await names(member.api)).toEqual({ names: ['Open'], withheld: '2', reasons: 'EMAIL_NOT_VERIFIED=1, MFA_ENROLMENT_REQUIRED=1' });
    // The owner, who meets both, sees all three.
    expect(await names(owner.api)).toEqual({ names: ['Open', 'Needs verified e-mail', 'Needs MFA'], withheld: '0', reasons: null });
    // An API key is exempt from requireMfa (as on the workspace's own routes), not from requireVerifiedEmail.
    const key = (await member.api.post('/v1/api-keys', { name: 'ci' })).body.key as string;
    expect(await names(client(server.url, key))).toEqual({ names: ['Open', 'Needs MFA'], withheld: '1', reasons: 'EMAIL_NOT_VERIFIED=1' });

    // Verified: the second comes back; enrolled: the third.
    await verifyFrom('list-member@example.com');
    expect(await names(member.api)).toEqual({ names: ['Open', 'Needs verified e-mail'], withheld: '1', reasons: 'MFA_ENROLMENT_REQUIRED=1' });
    const mine = await member.api.post('/v1/auth/mfa/totp', {});
    expect((await member.api.post('/v1/auth/mfa/totp/confirm', { code: totp(base32Decode(mine.body.secret), Date.now() / 1000) })).status).toBe(200);
    expect(await names(member.api)).toEqual({ names: ['Open', 'Needs verified e-mail', 'Needs MFA'], withheld: '0', reasons: null });
  });

  it('TOTP: enrol, confirm, sign-in asks for the code, recovery codes work once, disable with a code', async () => {
    const u = await register('mfa@example.com');
    const anon = client(server.url);
    const keyRes = await u.api.post('/v1/api-keys', { name: 'server' });
    // A second factor is set up on a confirmed address only.
    expect((await u.api.post('/v1/auth/mfa/totp', {})).body.error.code).toBe('EMAIL_NOT_VERIFIED');
    await confirmAddress(server, 'mfa@example.com');
    const enrol = await u.api.post('/v1/auth/mfa/totp', {});
    expect(enrol.status).toBe(201);
    expect(enrol.body.otpauthUri).toMatch(/^otpauth:\/\/totp\/Knowledge%20Base%3Amfa%40example\.com\?secret=[A-Z2-7]+&issuer=Knowledge%20Base/);
    const seed = base32Decode(enrol.body.secret);
    const t0 = Date.now() / 1000;
    const wrong = await u.api.post('/v1/auth/mfa/totp/confirm', { code: totp(seed, t0) === '000000' ? '111111' : '000000' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('INVALID_MFA_CODE');
    const confirm = await u.api.post('/v1/auth/mfa/totp/confirm', { code: totp(seed, t0) });
    expect(confirm.status).toBe(200);
    expect(confirm.body.recoveryCodes).toHaveLength(10);
    expect((await u.api.get('/v1/auth/me')).body.mfaEnabled).toBe(true);
    expect((await u.api.post('/v1/auth/mfa/totp', {})).body.error.code).toBe('MFA_ALREADY_ENABLED');

    const first = await anon.post('/v1/auth/login', { email: 'mfa@example.com', password: 'correct horse battery' });
    expect(first.status).toBe(401);
    expect(first.body.error.code).toBe('MFA_REQUIRED');
    const challenge = first.body.error.details.challenge as string;
    expect(first.body).not.toHaveProperty('accessToken');
    const bad = await anon.post('/v1/auth/login/mfa', { challenge, code: '12345' });
    expect(bad.status).toBe(401);
    const ok = await anon.post('/v1/auth/login/mfa', { challenge, code: totp(seed, t0 + 30) });
    expect(ok.status).toBe(200);
    expect((await client(server.url, ok.body.accessToken).get('/v1/auth/me')).status).toBe(200);
    // The same code again (replay) is refused.
    const replay = await anon.post('/v1/auth/login/mfa', { challenge, code: totp(seed, t0 + 30) });
    expect(replay.status).toBe(401);
    // A forged challenge, or an access token as a challenge, is refused.
    expect((await anon.post('/v1/auth/login/mfa', { challenge: ok.body.accessToken, code: totp(seed, t0) })).status).toBe(401);

    // A challenge is exchanged for one session: a recovery code does not make it work twice.
    const [rc1, rc2] = confirm.body.recoveryCodes as string[];
    expect((await anon.post('/v1/auth/login/mfa', { challenge, code: rc1 })).status).toBe(401);
    const challengeOfNewSignIn = async () => (await anon.post('/v1/auth/login', { email: 'mfa@example.com', password: 'correct horse battery' })).body.error.details.challenge as string;
    const viaRecovery = await anon.post('/v1/auth/login/mfa', { challenge: await challengeOfNewSignIn(), code: rc1.toUpperCase() });
    expect(viaRecovery.status).toBe(200);
    const again = await anon.post('/v1/auth/login/mfa', { challenge: await challengeOfNewSignIn(), code: rc1 });
    expect(again.status).toBe(401);
    expect(again.body.error.code).toBe('INVALID_MFA_CODE');
    // API keys stay usable for servers.
    expect((await client(server.url, keyRes.body.key).get('/v1/auth/me')).status).toBe(200);

    const api = client(server.url, ok.body.accessToken);
    expect((await api.post('/v1/auth/mfa/totp/disable', { code: '000000' })).status).toBe(401);
    const off = await api.post('/v1/auth/mfa/totp/disable', { code: rc2 });
    expect(off.status).toBe(200);
    expect((await anon.post('/v1/auth/login', { email: 'mfa@example.com', password: 'correct horse battery' })).status).toBe(200);

    const trail = await api.get('/v1/auth/security-events');
    const actions = trail.body.data.map((e: { action: string }) => e.action);
    for (const a of ['UserRegistered', 'EmailVerificationRequested', 'SessionStarted', 'MfaEnrollmentStarted', 'MfaEnabled', 'MfaRecoveryCodeUsed', 'MfaDisabled']) expect(actions).toContain(a);
    expect(JSON.stringify(trail.body)).not.toMatch(/sealedSecret|codeHash|passwordHash|v1:/);
  });

});
