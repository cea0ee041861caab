import { client, confirmAddress, signUp, startServer, TestServer } from '../support/server';
import { base32Decode, totp } from '../../src/security/totp';

/** The web console's session routes and its pages' headers (README "Web console"). */
describe('console: cookie session, renew, logout, and the /app pages', () => {
  let server: TestServer;
  const email = 'console@example.com';
  const password = 'correct horse battery';
  const H = { 'x-kb-console': '1' };

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    const reg = await client(server.url).post('/v1/auth/register', { email, password, name: 'Console' });
    expect(reg.status).toBe(201);
  });
  afterAll(async () => server.stop());

  const cookieOf = (headers: Headers): string => {
    const set = headers.getSetCookie().find((c) => c.startsWith('kb_console='));
    if (!set) throw new Error('no kb_console cookie set');
    return set;
  };
  const valueOf = (setCookie: string) => setCookie.split(';')[0];

  it('signs in: the refresh token only in an httpOnly, SameSite=Strict cookie scoped to the console routes', async () => {
    const r = await client(server.url).post('/v1/auth/console/session', { email, password }, H);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['accessToken', 'expiresIn']);
    expect(r.headers.get('cache-control')).toBe('no-store');
    const c = cookieOf(r.headers);
    expect(c).toMatch(/HttpOnly/);
    expect(c).toMatch(/SameSite=Strict/);
    expect(c).toMatch(/Path=\/v1\/auth\/console(;|$)/);
    expect(c).toMatch(/Max-Age=\d+/);
    // The access token works on the API.
    expect((await client(server.url, r.body.accessToken).get('/v1/auth/me')).body.email).toBe(email);
  });

  it('refuses sign-in with a wrong password, bad input, or without the console header', async () => {
    const anon = client(server.url);
    const wrong = await anon.post('/v1/auth/console/session', { email, password: 'nope nope nope' }, H);
    expect(wrong.status).toBe(401);
    expect(wrong.headers.getSetCookie()).toEqual([]);
    expect((await anon.post('/v1/auth/console/session', { email: 1 }, H)).body.error.code).toBe('VALIDATION_ERROR');
    const noHeader = await anon.post('/v1/auth/console/session', { email, password });
    expect(noHeader.status).toBe(403);
    expect(noHeader.body.error.code).toBe('FORBIDDEN');
  });

  it('renews with the cookie (rotating it); a replayed cookie ends the session', async () => {
    const anon = client(server.url);
    const s = await anon.post('/v1/auth/console/session', { email, password }, H);
    const first = valueOf(cookieOf(s.headers));
    const r1 = await anon.post('/v1/auth/console/renew', {}, { ...H, cookie: first });
    expect(r1.status).toBe(200);
    expect(r1.body.accessToken).toEqual(expect.any(String));
    const second = valueOf(cookieOf(r1.headers));
    expect(second).not.toBe(first);
    // The browser lost that answer (a reload while it was in flight): the first cookie again gets the same one.
    const lost = await anon.post('/v1/auth/console/renew', {}, { ...H, cookie: first });
    expect(lost.status).toBe(200);
    expect(valueOf(cookieOf(lost.headers))).toBe(second);
    const r2 = await anon.post('/v1/auth/console/renew', {}, { ...H, cookie: second });
    expect(r2.status).toBe(200);
    const third = valueOf(cookieOf(r2.headers));
    // Once the second was used, replaying the first is reuse: the session is revoked, the cookie cleared.
    const replay = await anon.post('/v1/auth/console/renew', {}, { ...H, cookie: first });
    expect(replay.status).toBe(401);
    expect(cookieOf(replay.headers)).toMatch(/kb_console=;|Expires=Thu, 01 Jan 1970/);
    const after = await anon.post('/v1/auth/console/renew', {}, { ...H, cookie: third });
    expect(after.status).toBe(401);
  });

  it('renew is CSRF-safe: the custom header and this origin are required', async () => {
    const anon = client(server.url);
    const s = await anon.post('/v1/auth/console/session', { email, password }, H);
    const cookie = valueOf(cookieOf(s.headers));
    const noHeader = await anon.post('/v1/auth/console/renew', {}, { cookie });
    expect(noHeader.status).toBe(403);
    const foreign = await anon.post('/v1/auth/console/renew', {}, { ...H, cookie, origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    const garbage = await anon.post('/v1/auth/console/renew', {}, { ...H, cookie, origin: 'not a url' });
    expect(garbage.status).toBe(403);
    // The cookie was not consumed by the refused attempts.
    const same = await anon.post('/v1/auth/console/renew', {}, { ...H, cookie, origin: server.url });
    expect(same.status).toBe(200);
  });

  it('renew without a cookie or with a forged one: 401, never a 500', async () => {
    const anon = client(server.url);
    expect((await anon.post('/v1/auth/console/renew', {}, H)).status).toBe(401);
    const forged = await anon.post('/v1/auth/console/renew', {}, { ...H, cookie: 'kb_console=00000000-0000-0000-0000-000000000000.abc' });
    expect(forged.status).toBe(401);
    const junk = await anon.post('/v1/auth/console/renew', {}, { ...H, cookie: 'kb_console=%%%; other=1' });
    expect(junk.status).toBe(401);
  });

  it('logout ends the session and clears the cookie', async () => {
    const anon = client(server.url);
    const s = await anon.post('/v1/auth/console/session', { email, password }, H);
    const cookie = valueOf(cookieOf(s.headers));
    const out = await anon.post('/v1/auth/console/logout', {}, { ...H, cookie });
    expect(out.status).toBe(204);
    expect(cookieOf(out.headers)).toMatch(/Expires=Thu, 01 Jan 1970/);
    expect((await anon.post('/v1/auth/console/renew', {}, { ...H, cookie })).status).toBe(401);
    // Signing out twice, or with no session, is fine.
    expect((await anon.post('/v1/auth/console/logout', {}, { ...H, cookie })).status).toBe(204);
    expect((await anon.post('/v1/auth/console/logout', {}, H)).status).toBe(204);
    expect((await anon.post('/v1/auth/console/logout', {})).status).toBe(403);
  });

  it('serves the console under /app with a strict CSP, no framing, and a history fallback', async () => {
    for (const p of ['/app', '/app/', '/app/w/00000000-0000-0000-0000-000000000000/documents', '/app/settings/api-keys']) {
      const r = await fetch(server.url + p);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/text\/html/);
      const csp = r.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      expect(r.headers.get('x-frame-options')).toBe('DENY');
      const html = await r.text();
      expect(html).toContain('<div id="root"></div>');
      // No inline script: every <script> has a src.
      expect(html.match(/<script(?![^>]*\bsrc=)[^>]*>/g)).toBeNull();
      expect(html).not.toMatch(/\sstyle=/);
    }
    const index = await (await fetch(server.url + '/app/')).text();
    const asset = /src="(\/app\/assets\/[^"]+\.js)"/.exec(index)?.[1];
    expect(asset).toBeDefined();
    const js = await fetch(server.url + asset);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    expect(js.headers.get('cache-control')).toMatch(/immutable/);
    expect((await fetch(server.url + '/app/assets/nope.js')).status).toBe(404);
    // The page itself is never stored (before: no-cache, which lets a browser or proxy keep it), under every path,
    // those of the mailed links with their token in the address included.
    for (const p of ['/app/', '/app/reset-password?token=abc.def', '/app/accept-invitation?token=abc.def']) expect([p, (await fetch(server.url + p)).headers.get('cache-control')]).toEqual([p, 'no-store']);
    const root = await fetch(server.url + '/', { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/app/');
  });

  it('the mailed links open the console pages with their token; /v1/auth/options says how one signs in here', async () => {
    for (const p of ['/verify-email', '/reset-password', '/accept-invitation']) {
      const r = await fetch(`${server.url}${p}?token=abc.def`, { redirect: 'manual' });
      expect(r.status).toBe(302);
      expect(r.headers.get('location')).toBe(`/app${p}?token=abc.def`);
    }
    const opts = await client(server.url).get('/v1/auth/options');
    expect(opts.body).toEqual({ registration: true, sso: false });
    const sso = await fetch(`${server.url}/v1/auth/console/sso`, { redirect: 'manual' });
    expect(sso.status).toBe(404);
    expect(((await sso.json()) as { error: { code: string } }).error.code).toBe('SSO_NOT_CONFIGURED');
  });

  it('signs in with a second factor: MFA_REQUIRED without a cookie, then the code sets the cookie', async () => {
    const u = await signUp(server.url, 'Mfa');
    await confirmAddress(server, u.email);
    const enrol = await u.api.post('/v1/auth/mfa/totp', {});
    const seed = base32Decode(enrol.body.secret);
    const t0 = Date.now() / 1000;
    expect((await u.api.post('/v1/auth/mfa/totp/confirm', { code: totp(seed, t0) })).status).toBe(200);
    const anon = client(server.url);
    const first = await anon.post('/v1/auth/console/session', { email: u.email, password: 'correct horse battery' }, H);
    expect(first.status).toBe(401);
    expect(first.body.error.code).toBe('MFA_REQUIRED');
    expect(first.headers.getSetCookie()).toEqual([]);
    const challenge = first.body.error.details.challenge as string;
    const wrongCode = totp(seed, t0 + 30) === '000000' ? '111111' : '000000';
    const wrong = await anon.post('/v1/auth/console/session/mfa', { challenge, code: wrongCode }, H);
    expect(wrong.status).toBe(401);
    expect(wrong.headers.getSetCookie()).toEqual([]);
    expect((await anon.post('/v1/auth/console/session/mfa', { challenge, code: totp(seed, t0 + 30) })).status).toBe(403); // no console header
    expect((await anon.post('/v1/auth/console/session/mfa', { challenge }, H)).body.error.code).toBe('VALIDATION_ERROR');
    const ok = await anon.post('/v1/auth/console/session/mfa', { challenge, code: totp(seed, t0 + 30) }, H);
    expect(ok.status).toBe(200);
    expect(Object.keys(ok.body).sort()).toEqual(['accessToken', 'expiresIn']);
    const cookie = valueOf(cookieOf(ok.headers));
    expect((await anon.post('/v1/auth/console/renew', {}, { ...H, cookie })).status).toBe(200);
    // The session carries the browser's label.
    const sessions = await client(server.url, ok.body.accessToken).get('/v1/auth/sessions');
    expect(sessions.body.data.find((x: { current: boolean }) => x.current)).toBeDefined();
  });
});
