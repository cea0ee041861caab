import { ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { client, startServer, TestServer } from '../support/server';
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

  it('links an existing password account by its verified address', async () => {
    const reg = await client(server.url).post('/v1/auth/register', { email: 'bob@corp.example', password: 'bobs password', name: 'Bob' });
    const r = await signIn('bob');
    expect(r.status).toBe(200);
    expect(r.body.user).toEqual({ id: reg.body.id, email: 'bob@corp.example', created: false });
    expect((await client(server.url).post('/v1/auth/login', { email: 'bob@corp.example', password: 'bobs password' })).status).toBe(200);
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
});
