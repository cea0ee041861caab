import { ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import Database from 'better-sqlite3';
import { client, confirmAddress, startServer, TestServer } from '../support/server';
import { base32Decode, totp } from '../../src/security/totp';
import { closed } from '../support/openapiSchema';

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });

/** A tiny cookie jar (name → value; paths ignored: one host, a short flow). */
class Jar {
  private cookies = new Map<string, string>();
  take(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair.indexOf('=');
      this.cookies.set(pair.slice(0, i).trim(), pair.slice(i + 1));
    }
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

describe('single sign-on with OpenID Connect (a real oidc-provider in a child process)', () => {
  let server: TestServer;
  let idp: ChildProcess;
  let idpUrl: string;

  beforeAll(async () => {
    const [kbPort, idpPort] = [await freePort(), await freePort()];
    idpUrl = `http://127.0.0.1:${idpPort}`;
    idp = spawn(process.execPath, [path.join(__dirname, '..', 'support', 'oidcProvider.mjs'), String(idpPort), `http://127.0.0.1:${kbPort}/v1/auth/oidc/callback`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`provider did not start: ${out}`)), 20_000);
      const on = (d: Buffer) => {
        out += d.toString();
        if (out.includes('OIDC_READY')) {
          clearTimeout(timer);
          resolve();
        }
      };
      idp.stdout?.on('data', on);
      idp.stderr?.on('data', on);
    });
    server = await startServer({
      PORT: String(kbPort),
      KB_RATE_LIMITS: 'off',
      KB_OIDC_ISSUER: idpUrl,
      KB_OIDC_CLIENT_ID: 'kb',
      KB_OIDC_CLIENT_SECRET: 'kb-test-secret',
      KB_OIDC_ALLOWED_DOMAINS: 'corp.example',
    });
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    idp?.kill('SIGTERM');
  });

  /** Start at the service, log in at the provider as `account`, and come back to the callback. */
  async function toCallback(account: string, startPath: string) {
    const kbJar = new Jar();
    const idpJar = new Jar();
    const start = await fetch(`${server.url}${startPath}`, { redirect: 'manual' });
    expect(start.status).toBe(302);
    kbJar.take(start);
    let url = start.headers.get('location') as string;
    expect(url.startsWith(`${idpUrl}/`)).toBe(true);
    expect(new URL(url).searchParams.get('code_challenge_method')).toBe('S256');
    for (let hops = 0; hops < 10 && url.startsWith(idpUrl); hops++) {
      let res = await fetch(url, { redirect: 'manual', headers: { cookie: idpJar.header() } });
      idpJar.take(res);
      if (res.status === 200 && /\/interaction\//.test(url)) {
        // The provider's login form: submit the account id.
        res = await fetch(url, { method: 'POST', redirect: 'manual', headers: { cookie: idpJar.header(), 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ prompt: 'login', login: account, password: 'x' }) });
        idpJar.take(res);
      }
      const next = res.headers.get('location');
      if (!next) throw new Error(`provider stopped at ${url}: ${res.status} ${await res.text()}`);
      url = new URL(next, url).href;
    }
    expect(url.startsWith(`${server.url}/v1/auth/oidc/callback?`)).toBe(true);
    return { url, kbJar };
  }

  async function signIn(account: string, opts: { dropFlowCookie?: boolean } = {}) {
    const { url, kbJar } = await toCallback(account, '/v1/auth/oidc/start');
    const cb = await fetch(url, { headers: opts.dropFlowCookie ? {} : { cookie: kbJar.header() } });
    return { status: cb.status, body: (await cb.json()) as any };
  }

  it('from the web console: the callback sets the console cookie (no token in the answer) and returns to /app/', async () => {
    expect((await client(server.url).get('/v1/auth/options')).body).toEqual({ registration: true, sso: true });
    const { url, kbJar } = await toCallback('carol', '/v1/auth/console/sso');
    const cb = await fetch(url, { redirect: 'manual', headers: { cookie: kbJar.header() } });
    expect(cb.status).toBe(302);
    expect(cb.headers.get('location')).toBe('/app/');
    expect(await cb.text()).not.toMatch(/accessToken|refreshToken/);
    const set = cb.headers.getSetCookie().find((c) => c.startsWith('kb_console='));
    expect(set).toMatch(/HttpOnly/);
    expect(set).toMatch(/SameSite=Strict/);
    expect(set).toMatch(/Path=\/v1\/auth\/console(;|$)/);
    const renew = await client(server.url).post('/v1/auth/console/renew', {}, { 'x-kb-console': '1', cookie: (set as string).split(';')[0] });
    expect(renew.status).toBe(200);
    expect((await client(server.url, renew.body.accessToken).get('/v1/auth/me')).body.email).toBe('carol@corp.example');
    // A refused sign-in goes back to the console's sign-in page with the code, and sets no session.
    const refused = await toCallback('mallory', '/v1/auth/console/sso');
    const back = await fetch(refused.url, { redirect: 'manual', headers: { cookie: refused.kbJar.header() } });
    expect(back.status).toBe(302);
    expect(back.headers.get('location')).toBe('/app/signin?ssoError=SSO_DOMAIN_NOT_ALLOWED');
    expect(back.headers.getSetCookie().some((c) => c.startsWith('kb_console='))).toBe(false);
  });

  it('creates an account on first sign-in (verified address, IdP sub recorded) and links it after', async () => {
    const first = await signIn('alice');
    expect(first.status).toBe(200);
    expect(first.body.user).toMatchObject({ email: 'alice@corp.example', created: true });
    const api = client(server.url, first.body.accessToken);
    expect((await api.get('/v1/auth/me')).body).toMatchObject({ email: 'alice@corp.example', emailVerified: true, name: 'Alice Corp' });
    const again = await signIn('alice');
    expect(again.status).toBe(200);
    expect(again.body.user).toEqual({ id: first.body.user.id, email: 'alice@corp.example', created: false });
    // Both answers are what /openapi.json describes for the callback's 200 (unknown fields refused); the console's 302 is described too.
    const callback = (await client(server.url).get('/openapi.json')).body.paths['/v1/auth/oidc/callback'].get.responses;
    expect(Object.keys(callback)).toEqual(expect.arrayContaining(['200', '302']));
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const schema = closed(callback['200'].content['application/json'].schema);
    for (const answer of [first.body, again.body]) expect([ajv.validate(schema, answer), ajv.errorsText()]).toEqual([true, 'No errors']);
    expect(ajv.validate(schema, { ...first.body, undocumentedField: 1 })).toBe(false);
    expect(ajv.validate(schema, { ...first.body, user: { ...first.body.user, created: 'yes' } })).toBe(false);
    const trail = (await api.get('/v1/auth/security-events')).body.data as { action: string; summary: Record<string, unknown> }[];
    expect(trail.filter((e) => e.action === 'SsoIdentityLinked')).toHaveLength(1);
    expect(trail.find((e) => e.action === 'SsoIdentityLinked')?.summary).toMatchObject({ issuer: idpUrl });
    expect(trail.filter((e) => e.action === 'SessionStarted' && e.summary.method === 'sso')).toHaveLength(2);
  });

  it('links an existing password account whose address was verified: its password keeps working', async () => {
    const anon = client(server.url);
    const reg = await anon.post('/v1/auth/register', { email: 'dave@corp.example', password: 'daves password', name: 'Dave' });
    const dir = path.join(server.dataDir, 'outbox');
    let raw: string | undefined;
    for (let i = 0; i < 200 && !raw; i++) {
      raw = fs.existsSync(dir) ? fs.readdirSync(dir).map((f) => fs.readFileSync(path.join(dir, f), 'utf8')).find((m) => m.includes('To: dave@corp.example')) : undefined;
      if (!raw) await new Promise((r) => setTimeout(r, 50));
    }
    const token = decodeURIComponent(/verify-email\?token=([A-Za-z0-9%._-]+)/.exec((raw as string).replace(/=\r?\n/g, '').replace(/=3D/g, '='))![1]);
    expect((await anon.post('/v1/auth/verify-email', { token })).status).toBe(200);
    const r = await signIn('dave');
    expect(r.status).toBe(200);
    expect(r.body.user).toEqual({ id: reg.body.id, email: 'dave@corp.example', created: false });
    expect((await anon.post('/v1/auth/login', { email: 'dave@corp.example', password: 'daves password' })).status).toBe(200);
  });

  it('pre-registration hijack: an account registered with the address but never confirmed is claimed; the password, sessions and API keys of whoever registered it stop working', async () => {
    // The attacker registers the victim's address (no mailbox needed), signs in and makes a key.
    const anon = client(server.url);
    const reg = await anon.post('/v1/auth/register', { email: 'bob@corp.example', password: 'attackers password', name: 'Bob' });
    expect(reg.status).toBe(201);
    const login = await anon.post('/v1/auth/login', { email: 'bob@corp.example', password: 'attackers password' });
    expect(login.status).toBe(200);
    const attacker = client(server.url, login.body.accessToken);
    const key = await attacker.post('/v1/api-keys', { name: 'kept' });
    expect(key.status).toBe(201);
    // The address's owner signs in through the provider (which verified it).
    const r = await signIn('bob');
    expect(r.status).toBe(200);
    expect(r.body.user).toEqual({ id: reg.body.id, email: 'bob@corp.example', created: false });
    const owner = client(server.url, r.body.accessToken);
    expect((await owner.get('/v1/auth/me')).body).toMatchObject({ email: 'bob@corp.example', emailVerified: true });
    // Before: the attacker's password, session and key went on working in the owner's account.
    expect((await anon.post('/v1/auth/login', { email: 'bob@corp.example', password: 'attackers password' })).status).toBe(401);
    expect((await anon.post('/v1/auth/refresh', { refreshToken: login.body.refreshToken })).status).toBe(401);
    expect((await attacker.get('/v1/auth/me')).status).toBe(401);
    expect((await client(server.url, key.body.key).get('/v1/workspaces')).status).toBe(401);
    // The owner's own session lives; the trail says what happened.
    const trail = (await owner.get('/v1/auth/security-events')).body.data as { action: string; summary: Record<string, unknown> }[];
    expect(trail.find((e) => e.action === 'SsoIdentityLinked')?.summary).toMatchObject({ claimedUnverified: true });
    expect(trail.filter((e) => e.action === 'SessionRevoked').map((e) => e.summary.reason)).toEqual(['account_claimed']);
    expect((await owner.get('/v1/auth/me')).status).toBe(200);
  });

  it('the address claim decides the account: upper case is folded; trailing dot, sub-domain, a second @, no address, controls or no email_verified are refused', async () => {
    const upper = await signIn('upper');
    expect(upper.status).toBe(200);
    expect(upper.body.user.email).toBe('upper@corp.example');
    // The provider's name is held to what registration accepts (before: kept as the provider sent it).
    const lb = await signIn('linebreaks');
    expect((await client(server.url, lb.body.accessToken).get('/v1/auth/me')).body.name).toBe('Line Break Name');
    for (const [account, code] of [
      ['trailingdot', 'SSO_FAILED'],
      ['subdomain', 'SSO_DOMAIN_NOT_ALLOWED'],
      ['quotedat', 'SSO_FAILED'],
      ['noaddress', 'SSO_FAILED'],
      ['controls', 'SSO_FAILED'],
      ['noclaim', 'SSO_FAILED'],
    ] as const) {
      const r = await signIn(account);
      expect([account, r.body.error?.code]).toEqual([account, code]);
    }
  });

  it('a callback replayed (same code and state, same flow cookie) or carried into another browser signs nobody in', async () => {
    const { url, kbJar } = await toCallback('alice', '/v1/auth/oidc/start');
    const first = await fetch(url, { headers: { cookie: kbJar.header() } });
    expect(first.status).toBe(200);
    const again = await fetch(url, { headers: { cookie: kbJar.header() } });
    expect(again.status).toBe(401);
    // Another browser's flow cookie (its own state, nonce and verifier) with this code.
    const other = await fetch(`${server.url}/v1/auth/oidc/start`, { redirect: 'manual' });
    const otherCookie = other.headers.getSetCookie()[0].split(';')[0];
    const second = await toCallback('alice', '/v1/auth/oidc/start');
    const swapped = await fetch(second.url, { headers: { cookie: otherCookie } });
    expect(swapped.status).toBe(401);
    expect(((await swapped.json()) as any).error.code).toBe('SSO_FAILED');
  });

  it('refuses other domains, unverified addresses and a callback without the flow cookie', async () => {
    const other = await signIn('mallory');
    expect(other.status).toBe(403);
    expect(other.body.error.code).toBe('SSO_DOMAIN_NOT_ALLOWED');
    const unverified = await signIn('unverified');
    expect(unverified.status).toBe(401);
    expect(unverified.body.error.code).toBe('SSO_FAILED');
    const noCookie = await signIn('alice', { dropFlowCookie: true });
    expect(noCookie.status).toBe(401);
    expect(noCookie.body.error.code).toBe('SSO_FAILED');
    const forged = await client(server.url).get('/v1/auth/oidc/callback?code=abc&state=def');
    expect(forged.status).toBe(401);
  });

  it('an account with a second factor is not signed in by the provider alone: 401 MFA_REQUIRED and a challenge (the console: its code form), then a code', async () => {
    const anon = client(server.url);
    expect((await anon.post('/v1/auth/register', { email: 'erin@corp.example', password: 'erins password', name: 'Erin' })).status).toBe(201);
    await confirmAddress(server, 'erin@corp.example');
    const login = await anon.post('/v1/auth/login', { email: 'erin@corp.example', password: 'erins password' });
    const erin = client(server.url, login.body.accessToken);
    const enrol = await erin.post('/v1/auth/mfa/totp', {});
    const confirmed = await erin.post('/v1/auth/mfa/totp/confirm', { code: totp(base32Decode(enrol.body.secret), Date.now() / 1000) });
    expect(confirmed.status).toBe(200);
    const [code1, code2] = confirmed.body.recoveryCodes as string[];
    // Through the API: no tokens, the challenge of a password sign-in; a code finishes it.
    const r = await signIn('erin');
    expect([r.status, r.body.error?.code, typeof r.body.error?.details?.challenge]).toEqual([401, 'MFA_REQUIRED', 'string']);
    expect(JSON.stringify(r.body)).not.toMatch(/accessToken|refreshToken/);
    const done = await anon.post('/v1/auth/login/mfa', { challenge: r.body.error.details.challenge, code: code1 });
    expect(done.status).toBe(200);
    expect((await client(server.url, done.body.accessToken).get('/v1/auth/me')).body.email).toBe('erin@corp.example');
    // From the console: back to the sign-in page's code form (the challenge in the fragment), no cookie yet.
    const { url, kbJar } = await toCallback('erin', '/v1/auth/console/sso');
    const cb = await fetch(url, { redirect: 'manual', headers: { cookie: kbJar.header() } });
    expect(cb.status).toBe(302);
    const location = cb.headers.get('location') as string;
    expect(location.startsWith('/app/signin#mfaChallenge=')).toBe(true);
    expect(cb.headers.getSetCookie().some((c) => c.startsWith('kb_console=') && !/kb_console=;/.test(c))).toBe(false);
    const challenge = decodeURIComponent(location.slice('/app/signin#mfaChallenge='.length));
    const consoleDone = await anon.post('/v1/auth/console/session/mfa', { challenge, code: code2 }, { 'x-kb-console': '1' });
    expect(consoleDone.status).toBe(200);
    expect(consoleDone.headers.getSetCookie().some((c) => c.startsWith('kb_console='))).toBe(true);
    // Without a second factor the provider's sign-in is enough, as before.
    expect((await signIn('alice')).status).toBe(200);
  });
  it("with a second factor, the provider's sub is linked only once the code is passed: an abandoned or failed challenge links nothing, and the owner's own sign-on still works", async () => {
    const anon = client(server.url);
    expect((await anon.post('/v1/auth/register', { email: 'gina@corp.example', password: 'ginas password', name: 'Gina' })).status).toBe(201);
    await confirmAddress(server, 'gina@corp.example');
    const login = await anon.post('/v1/auth/login', { email: 'gina@corp.example', password: 'ginas password' });
    const gina = client(server.url, login.body.accessToken);
    const enrol = await gina.post('/v1/auth/mfa/totp', {});
    const confirmed = await gina.post('/v1/auth/mfa/totp/confirm', { code: totp(base32Decode(enrol.body.secret), Date.now() / 1000) });
    expect(confirmed.status).toBe(200);
    const [code1, code2] = confirmed.body.recoveryCodes as string[];
    /** The SsoIdentityLinked events of the log (their data is not encrypted). */
    const links = () => {
      const db = new Database(path.join(server.dataDir, 'events.db'), { readonly: true });
      try {
        return (db.prepare("SELECT data FROM events WHERE type = 'SsoIdentityLinked'").all() as { data: string }[]).map((r) => JSON.parse(r.data) as { userId: string; subject: string });
      } finally {
        db.close();
      }
    };
    const ginaLinks = () => links().filter((d) => d.subject.startsWith('gina'));
    // An impostor at the provider with gina's address: the challenge, abandoned, or failed with a wrong code.
    const abandoned = await signIn('gina-impostor');
    expect([abandoned.status, abandoned.body.error?.code]).toEqual([401, 'MFA_REQUIRED']);
    const failed = await signIn('gina-impostor');
    expect([failed.status, failed.body.error?.code]).toEqual([401, 'MFA_REQUIRED']);
    expect((await anon.post('/v1/auth/login/mfa', { challenge: failed.body.error.details.challenge, code: 'wrong-code' })).status).toBe(401);
    // Before: the impostor's sub was recorded by the callback itself.
    expect(ginaLinks()).toEqual([]);
    // The owner's own sign-on is asked for the code (before: 409 SSO_ACCOUNT_MISMATCH) and, passed, links her sub.
    const own = await signIn('gina');
    expect([own.status, own.body.error?.code]).toEqual([401, 'MFA_REQUIRED']);
    expect(ginaLinks()).toEqual([]);
    const done = await anon.post('/v1/auth/login/mfa', { challenge: own.body.error.details.challenge, code: code1 });
    expect(done.status).toBe(200);
    expect(ginaLinks().map((d) => d.subject)).toEqual(['gina']);
    const trail = (await client(server.url, done.body.accessToken).get('/v1/auth/security-events')).body.data as { action: string }[];
    expect(trail.filter((e) => e.action === 'SsoIdentityLinked')).toHaveLength(1);
    // Linked now: the impostor is refused at once (no challenge), the owner is asked for her code again and nothing more is linked.
    const later = await signIn('gina-impostor');
    expect([later.status, later.body.error?.code]).toEqual([409, 'SSO_ACCOUNT_MISMATCH']);
    const again = await signIn('gina');
    expect([again.status, again.body.error?.code]).toEqual([401, 'MFA_REQUIRED']);
    expect((await anon.post('/v1/auth/login/mfa', { challenge: again.body.error.details.challenge, code: code2 })).status).toBe(200);
    expect(ginaLinks().map((d) => d.subject)).toEqual(['gina']);
  });
});
