import fs from 'node:fs';
import path from 'node:path';
import { client, confirmAddress, startServer, TestServer } from '../support/server';
import { base32Decode, totp } from '../../src/security/totp';

/*
 * A second look at identity (sign-in with a second factor, recovery, rotation) as an attacker
 * would: a malicious holder of a password, a replayed challenge, concurrent requests. Rate
 * limits are on here, as in production (the credential limit is 30 a minute per IP, and every
 * request comes from 127.0.0.1: each server below stays under it).
 */

const PASSWORD = 'correct horse battery';
const unQp = (s: string) => s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));

async function waitFor<T>(what: string, probe: () => T | undefined, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The token of a mailed link to `page` for `email` in the outbox (the embedded default), other than those in `seen`. */
function mailedToken(server: TestServer, email: string, page: string, seen: string[] = []): Promise<string> {
  const dir = path.join(server.dataDir, 'outbox');
  return waitFor(`a ${page} mail to ${email}`, () => {
    if (!fs.existsSync(dir)) return undefined;
    const tokens = fs
      .readdirSync(dir)
      .map((f) => unQp(fs.readFileSync(path.join(dir, f), 'utf8')))
      .filter((raw) => raw.includes(`To: ${email}`))
      .map((raw) => new RegExp(`/${page}\\?token=([A-Za-z0-9%._-]+)`).exec(raw)?.[1])
      .filter((t): t is string => t !== undefined)
      .map((t) => decodeURIComponent(t))
      .filter((t) => !seen.includes(t));
    return tokens[0];
  });
}

/** Register, sign in, turn TOTP on. */
async function withTotp(server: TestServer, email: string) {
  const anon = client(server.url);
  expect((await anon.post('/v1/auth/register', { email, password: PASSWORD, name: 'M' })).status).toBe(201);
  await confirmAddress(server, email);
  const login = await anon.post('/v1/auth/login', { email, password: PASSWORD });
  expect(login.status).toBe(200);
  const api = client(server.url, login.body.accessToken);
  const enrol = await api.post('/v1/auth/mfa/totp', {});
  const seed = base32Decode(enrol.body.secret);
  const t0 = Date.now() / 1000;
  const confirm = await api.post('/v1/auth/mfa/totp/confirm', { code: totp(seed, t0) });
  expect(confirm.status).toBe(200);
  const challenge = async () => {
    const r = await anon.post('/v1/auth/login', { email, password: PASSWORD });
    expect(r.body.error.code).toBe('MFA_REQUIRED');
    return r.body.error.details.challenge as string;
  };
  return { anon, api, seed, t0, recoveryCodes: confirm.body.recoveryCodes as string[], challenge };
}

describe('second factor: one challenge, one session; wrong codes counted per account', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_MFA_FAILURES_PER_ACCOUNT_PER_HOUR: '3' });
  }, 60_000);
  afterAll(() => server?.stop());

  it('a challenge that gave a session gives no other (with a recovery code, or two codes at once)', async () => {
    const u = await withTotp(server, 'reuse@example.com');
    const challenge = await u.challenge();
    const ok = await u.anon.post('/v1/auth/login/mfa', { challenge, code: totp(u.seed, u.t0 + 30) });
    expect(ok.status).toBe(200);
    // Before: the same challenge with a recovery code answered 200 and a second session.
    const reused = await u.anon.post('/v1/auth/login/mfa', { challenge, code: u.recoveryCodes[0] });
    expect(reused.status).toBe(401);
    expect(reused.body.error.code).toBe('UNAUTHORIZED');
    // Two codes with one challenge at the same time: one session (before: two).
    const once = await u.challenge();
    const both = await Promise.all([u.recoveryCodes[1], u.recoveryCodes[2]].map((code) => u.anon.post('/v1/auth/login/mfa', { challenge: once, code })));
    expect(both.map((r) => r.status).sort()).toEqual([200, 401]);
    // One recovery code with two challenges at the same time: used once (already so before).
    const [c1, c2] = [await u.challenge(), await u.challenge()];
    const same = await Promise.all([c1, c2].map((challenge) => u.anon.post('/v1/auth/login/mfa', { challenge, code: u.recoveryCodes[3] })));
    expect(same.map((r) => r.status).sort()).toEqual([200, 401]);
    // The recovery code refused with the spent challenge was not spent by it.
    const later = await u.anon.post('/v1/auth/login/mfa', { challenge: c1, code: u.recoveryCodes[0] });
    const fresh = later.status === 200 ? later : await u.anon.post('/v1/auth/login/mfa', { challenge: c2, code: u.recoveryCodes[0] });
    expect(fresh.status).toBe(200);
    const sessions = await client(server.url, fresh.body.accessToken).get('/v1/auth/sessions');
    // enrolment's session, the TOTP one, one of the two at once, one of the shared code, this one.
    expect(sessions.body.data).toHaveLength(5);
  });

  it('wrong codes are counted per account over every challenge and route: then 429, even for the right code', async () => {
    const u = await withTotp(server, 'guesser@example.com');
    const wrong = (c: string) => (totp(u.seed, Date.now() / 1000) === c ? '111111' : c);
    const first = await u.challenge();
    expect((await u.anon.post('/v1/auth/login/mfa', { challenge: first, code: wrong('000000') })).body.error.code).toBe('INVALID_MFA_CODE');
    expect((await u.anon.post('/v1/auth/login/mfa', { challenge: first, code: 'aaaaa-bbbbb' })).body.error.code).toBe('INVALID_MFA_CODE');
    // A new sign-in gives a new challenge (its own 5 tries), and the console's route is another door to the same count.
    const second = await u.challenge();
    const viaConsole = await u.anon.post('/v1/auth/console/session/mfa', { challenge: second, code: wrong('222222') }, { 'x-kb-console': '1' });
    expect(viaConsole.body.error.code).toBe('INVALID_MFA_CODE');
    // Three wrong codes spent the hour's budget: before, the right code answered 200 here.
    const right = await u.anon.post('/v1/auth/login/mfa', { challenge: second, code: totp(u.seed, u.t0 + 30) });
    expect(right.status).toBe(429);
    expect(right.body.error.code).toBe('RATE_LIMITED');
    expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(0);
    // Turning TOTP off with a guessed code is the same count (a stolen session cannot guess there instead).
    expect((await u.api.post('/v1/auth/mfa/totp/disable', { code: u.recoveryCodes[0] })).status).toBe(429);
    // Another account is not affected.
    const other = await withTotp(server, 'bystander@example.com');
    expect((await other.anon.post('/v1/auth/login/mfa', { challenge: await other.challenge(), code: totp(other.seed, other.t0 + 30) })).status).toBe(200);
  });
});

describe('recovery, rotation: after a reset, at the same time', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({});
  }, 60_000);
  afterAll(() => server?.stop());

  it("a password reset voids the sign-in challenges the old password gave (the second factor stays on)", async () => {
    const u = await withTotp(server, 'reset@example.com');
    const old = await u.challenge();
    expect((await u.anon.post('/v1/auth/forgot-password', { email: 'reset@example.com' })).status).toBe(202);
    const token = await mailedToken(server, 'reset@example.com', 'reset-password');
    expect((await u.anon.post('/v1/auth/reset-password', { token, password: 'a brand new password' })).status).toBe(200);
    // Before: the old password's challenge and a code still gave a session.
    const late = await u.anon.post('/v1/auth/login/mfa', { challenge: old, code: totp(u.seed, u.t0 + 30) });
    expect(late.status).toBe(401);
    expect(late.body.error.code).toBe('UNAUTHORIZED');
    // The reset did not turn the second factor off, and the same token does not work twice.
    const next = await u.anon.post('/v1/auth/login', { email: 'reset@example.com', password: 'a brand new password' });
    expect(next.body.error.code).toBe('MFA_REQUIRED');
    expect((await u.anon.post('/v1/auth/reset-password', { token, password: 'yet another password' })).body.error.code).toBe('INVALID_TOKEN');
    expect((await u.anon.post('/v1/auth/login/mfa', { challenge: next.body.error.details.challenge, code: totp(u.seed, u.t0 + 30) })).status).toBe(200);
  });

  it("pre-registration hijack by reset: the owner's reset of an address someone registered unconfirmed confirms it and ends that someone's API keys", async () => {
    const anon = client(server.url);
    expect((await anon.post('/v1/auth/register', { email: 'victim@example.com', password: 'the attackers pick', name: 'V' })).status).toBe(201);
    const attacker = client(server.url, (await anon.post('/v1/auth/login', { email: 'victim@example.com', password: 'the attackers pick' })).body.accessToken);
    const key = await attacker.post('/v1/api-keys', { name: 'left behind' });
    expect(key.status).toBe(201);
    // The address's owner, who never registered, uses "forgot password".
    expect((await anon.post('/v1/auth/forgot-password', { email: 'victim@example.com' })).status).toBe(202);
    const token = await mailedToken(server, 'victim@example.com', 'reset-password');
    expect((await anon.post('/v1/auth/reset-password', { token, password: 'the owners own pick' })).status).toBe(200);
    // Before: the attacker's key went on reading the account (and every workspace the owner joins).
    expect((await client(server.url, key.body.key).get('/v1/workspaces')).status).toBe(401);
    const owner = client(server.url, (await anon.post('/v1/auth/login', { email: 'victim@example.com', password: 'the owners own pick' })).body.accessToken);
    expect((await owner.get('/v1/auth/me')).body.emailVerified).toBe(true);
    // A key the owner makes now survives the owner's next reset (the README's promise for confirmed addresses).
    const ownKey = await owner.post('/v1/api-keys', { name: 'mine' });
    expect((await anon.post('/v1/auth/forgot-password', { email: 'victim@example.com' })).status).toBe(202);
    const second = await mailedToken(server, 'victim@example.com', 'reset-password', [token]);
    expect((await anon.post('/v1/auth/reset-password', { token: second, password: 'another own pick' })).status).toBe(200);
    expect((await client(server.url, ownKey.body.key).get('/v1/workspaces')).status).toBe(200);
  });

  it("a leaked API key cannot enrol a second factor of its own (the owner would be locked out: a reset leaves it on) nor turn one off", async () => {
    const anon = client(server.url);
    expect((await anon.post('/v1/auth/register', { email: 'keyed@example.com', password: PASSWORD, name: 'K' })).status).toBe(201);
    const session = client(server.url, (await anon.post('/v1/auth/login', { email: 'keyed@example.com', password: PASSWORD })).body.accessToken);
    const key = client(server.url, (await session.post('/v1/api-keys', { name: 'ci' })).body.key);
    // Before: 201 and the seed, then confirm with it: the password alone no longer signed the owner in.
    const enrol = await key.post('/v1/auth/mfa/totp', {});
    expect([enrol.status, enrol.body.error?.code]).toEqual([403, 'FORBIDDEN']);
    expect((await key.post('/v1/auth/mfa/totp/confirm', { code: '123456' })).status).toBe(403);
    expect((await key.post('/v1/auth/mfa/totp/disable', { code: '123456' })).status).toBe(403);
    expect((await session.get('/v1/auth/me')).body.mfaEnabled).toBe(false);
    // From the owner's session: on a confirmed address only.
    const unconfirmed = await session.post('/v1/auth/mfa/totp', {});
    expect([unconfirmed.status, unconfirmed.body.error?.code]).toEqual([403, 'EMAIL_NOT_VERIFIED']);
    await confirmAddress(server, 'keyed@example.com');
    expect((await session.post('/v1/auth/mfa/totp', {})).status).toBe(201);
  });

  it('two refreshes with one token at the same time never leave two live pairs: one client gets one answer twice, two clients revoke the session; the console cookie likewise', async () => {
    const anon = client(server.url);
    expect((await anon.post('/v1/auth/register', { email: 'rotate@example.com', password: PASSWORD, name: 'R' })).status).toBe(201);
    // The same client twice at once (a retry): both get the same new token, one live pair.
    const login = await anon.post('/v1/auth/login', { email: 'rotate@example.com', password: PASSWORD });
    const both = await Promise.all([0, 1].map(() => anon.post('/v1/auth/refresh', { refreshToken: login.body.refreshToken })));
    expect(both.map((r) => r.status)).toEqual([200, 200]);
    expect(both[1].body.refreshToken).toBe(both[0].body.refreshToken);
    // Two clients at once (a thief racing the owner): no live pair is left.
    const login2 = await anon.post('/v1/auth/login', { email: 'rotate@example.com', password: PASSWORD });
    const raced = await Promise.all(['one', 'another'].map((ua) => anon.post('/v1/auth/refresh', { refreshToken: login2.body.refreshToken }, { 'user-agent': ua })));
    for (const [i, r] of raced.entries()) {
      if (r.status !== 200) continue;
      expect((await anon.post('/v1/auth/refresh', { refreshToken: r.body.refreshToken }, { 'user-agent': i === 0 ? 'one' : 'another' })).status).toBe(401);
      expect((await client(server.url, r.body.accessToken).get('/v1/auth/me')).status).toBe(401);
    }
    expect(raced.some((r) => r.status === 401)).toBe(true);
    const H = { 'x-kb-console': '1' };
    const consoleLogin = await anon.post('/v1/auth/console/session', { email: 'rotate@example.com', password: PASSWORD }, H);
    const cookie = (consoleLogin.headers.getSetCookie().find((c) => c.startsWith('kb_console=')) as string).split(';')[0];
    const renews = await Promise.all(['one', 'another'].map((ua) => anon.post('/v1/auth/console/renew', {}, { ...H, cookie, 'user-agent': ua })));
    for (const [i, r] of renews.entries()) {
      if (r.status !== 200) continue;
      const next = (r.headers.getSetCookie().find((c) => c.startsWith('kb_console=')) as string).split(';')[0];
      expect((await anon.post('/v1/auth/console/renew', {}, { ...H, cookie: next, 'user-agent': i === 0 ? 'one' : 'another' })).status).toBe(401);
    }
    expect(renews.some((r) => r.status === 401)).toBe(true);
  });
});

describe('a second factor is set up only from a recent sign-in', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_MFA_ENROL_SIGNIN_AGE: '5' });
  }, 60_000);
  afterAll(() => server?.stop());

  it('a session kept alive by refreshes (a stolen refresh token, say) cannot enrol a second factor of its own; a fresh sign-in can', async () => {
    const anon = client(server.url);
    expect((await anon.post('/v1/auth/register', { email: 'old@example.com', password: PASSWORD, name: 'O' })).status).toBe(201);
    await confirmAddress(server, 'old@example.com');
    const login = await anon.post('/v1/auth/login', { email: 'old@example.com', password: PASSWORD });
    // The session outlives the bound (the wait is the session's age, not a measured figure).
    await new Promise((r) => setTimeout(r, 5_500));
    const renewed = await anon.post('/v1/auth/refresh', { refreshToken: login.body.refreshToken });
    expect(renewed.status).toBe(200);
    const stale = await client(server.url, renewed.body.accessToken).post('/v1/auth/mfa/totp', {});
    // Before: 201 and a seed of the thief's own.
    expect([stale.status, stale.body.error?.code]).toEqual([403, 'FORBIDDEN']);
    expect(stale.body.error.message).toMatch(/Sign in again/);
    const fresh = client(server.url, (await anon.post('/v1/auth/login', { email: 'old@example.com', password: PASSWORD })).body.accessToken);
    expect((await fresh.post('/v1/auth/mfa/totp', {})).status).toBe(201);
  });
});

describe('a TOTP code is good once, after a restart too', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({});
  }, 60_000);
  afterAll(() => server?.stop());

  it('a code used to sign in is refused after the server restarts (the step is on the log, not in the memory of one process)', async () => {
    const u = await withTotp(server, 'restart@example.com');
    const code = totp(u.seed, u.t0 + 30);
    expect((await u.anon.post('/v1/auth/login/mfa', { challenge: await u.challenge(), code })).status).toBe(200);
    expect((await u.anon.post('/v1/auth/login/mfa', { challenge: await u.challenge(), code })).body.error.code).toBe('INVALID_MFA_CODE');
    await server.stop();
    server = await startServer({}, server.dataDir);
    const anon = client(server.url);
    const again = await anon.post('/v1/auth/login', { email: 'restart@example.com', password: PASSWORD });
    // Before: the restarted process had forgotten the step, and the same code (still in its window) signed in again.
    const replay = await anon.post('/v1/auth/login/mfa', { challenge: again.body.error.details.challenge, code });
    expect([replay.status, replay.body.error?.code]).toEqual([401, 'INVALID_MFA_CODE']);
    // A recovery code still works; the trail records the accepted code without the code.
    const ok = await anon.post('/v1/auth/login/mfa', { challenge: again.body.error.details.challenge, code: u.recoveryCodes[0] });
    expect(ok.status).toBe(200);
    const trail = (await client(server.url, ok.body.accessToken).get('/v1/auth/security-events')).body.data as { action: string; summary: Record<string, unknown> }[];
    expect(trail.filter((e) => e.action === 'MfaCodeAccepted')).toHaveLength(1);
    expect(JSON.stringify(trail)).not.toContain(code);
  });
});
