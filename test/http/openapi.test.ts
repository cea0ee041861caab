import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import Ajv2020 from 'ajv/dist/2020';
import { client, confirmAddress, signUp, startServer, TestServer } from '../support/server';
import { closed } from '../support/openapiSchema';
import { base32Decode, totp } from '../../src/security/totp';

const root = path.resolve(__dirname, '..', '..');

/** Run a node child in the repository (jest here is CommonJS; some dependencies are ES modules). */
function node(args: string[], input?: string): Promise<string> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, args, { cwd: root, maxBuffer: 16 * 1024 * 1024 }, (_err, stdout, stderr) => resolve(stdout + stderr));
    child.stdin?.end(input ?? '');
  });
}

/** The token of the `page` link in a mail (quoted-printable undone). */
function tokenIn(raw: string, page: string): string {
  const text = raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
  const m = new RegExp(`https?://[^\\s]+/${page}\\?token=[A-Za-z0-9%._-]+`).exec(text);
  if (!m) throw new Error(`no ${page} link in:\n${raw}`);
  return decodeURIComponent(new URL(m[0]).searchParams.get('token') as string);
}

describe('OpenAPI 3.1 at /openapi.json, the reference at /docs', () => {
  let server: TestServer;
  let doc: any;
  let walked: { routes: string[]; examples: { key: string; problem: string | null }[] };

  beforeAll(async () => {
    server = await startServer({ KB_LOG_LEVEL: 'warn', KB_BASE_URL: 'https://kb.example.com' });
    const r = await fetch(`${server.url}/openapi.json`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    doc = await r.json();
    const out = await node([path.join(root, 'test/support/walkRoutes.js')]);
    try {
      walked = JSON.parse(out);
    } catch {
      throw new Error(`walkRoutes failed: ${out}`);
    }
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    // swagger-parser is an ES module (jest runs CommonJS here): validate in a node child.
    const script = "import SwaggerParser from '@apidevtools/swagger-parser'; let s=''; process.stdin.on('data', (d) => (s += d)); process.stdin.on('end', async () => { try { await SwaggerParser.validate(JSON.parse(s)); console.log('VALID'); } catch (e) { console.log('INVALID ' + e.message); process.exitCode = 1; } });";
    const out = await node(['--input-type=module', '-e', script], JSON.stringify(doc));
    expect(out.trim()).toBe('VALID');
    expect(doc.servers).toEqual([{ url: 'https://kb.example.com' }]);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['apiKey', 'bearerJwt']);
  });

  it('describes every route the app registers, and nothing else', async () => {
    const registered = new Set(walked.routes);
    const documented = new Set<string>();
    for (const [p, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const m of Object.keys(ops)) documented.add(`${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`);
    }
    expect(registered.size).toBeGreaterThan(90);
    expect([...registered].filter((r) => !documented.has(r)).sort()).toEqual([]);
    expect([...documented].filter((r) => !registered.has(r)).sort()).toEqual([]);
  });

  it('request schemas come from the codecs: strict bodies, named codecs as constrained strings, the new routes included', () => {
    const text = doc.paths['/v1/workspaces/{id}/documents'].post;
    const schema = text.requestBody.content['application/json'].schema;
    expect(schema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: ['title', 'content', 'format'],
      properties: { title: { type: 'string', minLength: 1, maxLength: 255 }, format: { enum: ['markdown', 'text'] }, tags: { type: 'array', items: { type: 'string', format: 'uuid' } } },
    });
    expect(text.requestBody.content['multipart/form-data'].schema.required).toEqual(['file']);
    expect(text.security).toEqual([{ bearerJwt: [] }, { apiKey: [] }]);
    expect(doc.paths['/v1/documents/{docId}/file'].get.responses['200'].content).toHaveProperty(['application/octet-stream']);
    const link = doc.paths['/api/workspaces/{workspaceId}/public-links'].post.requestBody.content['application/json'].schema;
    expect(link.properties.toolProfile).toEqual({ type: 'string', enum: ['default', 'chatgpt'] });
    const list = doc.paths['/v1/workspaces/{id}/documents'].get.parameters;
    expect(list).toEqual(expect.arrayContaining([{ name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100 } }]));
    expect(doc.paths['/v1/auth/login'].post.security).toEqual([]);
    expect(doc.paths['/mcp/{token}'].post.responses['403'].$ref).toBe('#/components/responses/mcp_403');
  });

  it('names every error code in the envelope of its route family', () => {
    const r = doc.components.responses;
    expect(r.v1_404.content['application/json'].schema.properties.error.properties.code.enum).toEqual(expect.arrayContaining(['DOCUMENT_NOT_FOUND', 'WORKSPACE_NOT_FOUND', 'NOT_FOUND']));
    expect(r.api_400.content['application/json'].schema.properties.error.required).toContain('suggestion');
    expect(r.public_429.content['application/json'].schema.properties.error.enum).toContain('RATE_LIMITED');
    expect(doc.paths['/api/instruction-sets/{id}'].get.responses['404'].$ref).toBe('#/components/responses/api_404');
    expect(doc.paths['/public/{token}/search'].get.responses['404'].$ref).toBe('#/components/responses/public_404');
    // /readyz's 503 is its own body (not ready yet), not the error envelope.
    const readyz = doc.paths['/readyz'].get.responses;
    expect(readyz['503'].content['application/json'].schema).toEqual(readyz['200'].content['application/json'].schema);
    expect(readyz['503'].content['application/json'].schema.properties.status.enum).toEqual(['ready', 'warming', 'catching_up']);
  });

  it('every request example decodes with the codec it documents', () => {
    expect(walked.examples.length).toBeGreaterThan(10);
    expect(walked.examples.filter((e) => e.problem !== null)).toEqual([]);
  });

  it('real answers of the main routes validate against their documented schemas, unknown fields refused', async () => {
    // ajv (2020-12 drafts, as OpenAPI 3.1 uses) comes with swagger-parser's dependencies.
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const checked = new Set<string>();
    const check = (method: string, p: string, r: { status: number; body: unknown }, status = 200) => {
      expect([method, p, r.status]).toEqual([method, p, status]);
      const described = doc.paths[p][method].responses[String(status)].content['application/json'].schema;
      // Described, not the bare `{type: object}` of a route without a response codec.
      expect([p, Object.keys(described).length > 1 || described.type !== 'object']).toEqual([p, true]);
      const schema = closed(described);
      const ok = ajv.validate(schema, r.body);
      expect([method, p, ok ? null : `${ajv.errorsText()} in ${JSON.stringify(r.body).slice(0, 400)}`]).toEqual([method, p, null]);
      // The schema can fail: a field it does not describe is refused, and so is a wrong type.
      const sample = Array.isArray(r.body) ? r.body[0] : r.body;
      const probe = Array.isArray(r.body) ? (x: unknown) => [x] : (x: unknown) => x;
      expect(ajv.validate(schema, probe({ ...(sample as object), undocumentedField: 1 }))).toBe(false);
      expect(ajv.validate(schema, probe({ ...(sample as object), [Object.keys(sample as object)[0]]: { wrong: true } }))).toBe(false);
      checked.add(`${method.toUpperCase()} ${p}`);
    };
    const anon = client(server.url);
    const email = `openapi-${Date.now()}@example.com`;
    check('post', '/v1/auth/register', await anon.post('/v1/auth/register', { email, password: 'correct horse battery', name: 'Open' }), 201);
    const login = await anon.post('/v1/auth/login', { email, password: 'correct horse battery' });
    check('post', '/v1/auth/login', login);
    check('post', '/v1/auth/refresh', await anon.post('/v1/auth/refresh', { refreshToken: login.body.refreshToken }));
    const api = client(server.url, login.body.accessToken);
    check('get', '/v1/auth/me', await api.get('/v1/auth/me'));
    check('post', '/v1/api-keys', await api.post('/v1/api-keys', { name: 'CI' }), 201);
    check('get', '/v1/api-keys', await api.get('/v1/api-keys'));

    // Identity flows: mails land in the outbox (the embedded default), one .eml each.
    const outbox = path.join(server.dataDir, 'outbox');
    const mailedToken = async (to: string, page: string): Promise<string> => {
      for (let i = 0; i < 200; i++) {
        const files = fs.existsSync(outbox) ? fs.readdirSync(outbox).filter((f) => f.endsWith('.eml')) : [];
        for (const raw of files.map((f) => fs.readFileSync(path.join(outbox, f), 'utf8')).filter((r) => r.includes(`To: ${to}`))) {
          try {
            return tokenIn(raw, page);
          } catch {
            // Another mail to the same address.
          }
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`no ${page} mail to ${to}`);
    };
    check('get', '/v1/auth/options', await anon.get('/v1/auth/options'));
    check('post', '/v1/auth/verify-email', await anon.post('/v1/auth/verify-email', { token: await mailedToken(email, 'verify-email') }));
    const resent = await api.post('/v1/auth/resend-verification', {});
    expect(resent.body).toEqual({ emailVerified: true, sent: false });
    check('post', '/v1/auth/resend-verification', resent, 202);
    check('get', '/v1/auth/sessions', await api.get('/v1/auth/sessions'));
    check('get', '/v1/auth/security-events', await api.get('/v1/auth/security-events'));

    // The console's cookie session (each call with its header).
    const H = { 'x-kb-console': '1' };
    const consoleSession = await anon.post('/v1/auth/console/session', { email, password: 'correct horse battery' }, H);
    check('post', '/v1/auth/console/session', consoleSession);
    const cookie = (consoleSession.headers.getSetCookie().find((c) => c.startsWith('kb_console=')) ?? '').split(';')[0];
    check('post', '/v1/auth/console/renew', await anon.post('/v1/auth/console/renew', {}, { ...H, cookie }));
    // Sign out the others: the console session and one more sign-in.
    expect((await anon.post('/v1/auth/login', { email, password: 'correct horse battery' })).status).toBe(200);
    const revoked = await api.delete('/v1/auth/sessions');
    expect(revoked.body.revoked).toBe(2);
    check('delete', '/v1/auth/sessions', revoked);

    // TOTP: enrol, confirm, a console sign-in with the second step, disable with a recovery code.
    const mfa = await signUp(server.url, 'Mfa');
    await confirmAddress(server, mfa.email);
    const enrol = await mfa.api.post('/v1/auth/mfa/totp', {});
    check('post', '/v1/auth/mfa/totp', enrol, 201);
    const seed = base32Decode(enrol.body.secret);
    const t0 = Date.now() / 1000;
    const confirmed = await mfa.api.post('/v1/auth/mfa/totp/confirm', { code: totp(seed, t0) });
    check('post', '/v1/auth/mfa/totp/confirm', confirmed);
    const firstStep = await anon.post('/v1/auth/console/session', { email: mfa.email, password: 'correct horse battery' }, H);
    expect([firstStep.status, firstStep.body.error?.code]).toEqual([401, 'MFA_REQUIRED']);
    check('post', '/v1/auth/console/session/mfa', await anon.post('/v1/auth/console/session/mfa', { challenge: firstStep.body.error.details.challenge, code: totp(seed, t0 + 30) }, H));
    check('post', '/v1/auth/mfa/totp/disable', await mfa.api.post('/v1/auth/mfa/totp/disable', { code: confirmed.body.recoveryCodes[0] }));

    // Password reset through the mailed link.
    const forgetful = await signUp(server.url, 'Reset');
    check('post', '/v1/auth/forgot-password', await anon.post('/v1/auth/forgot-password', { email: forgetful.email }), 202);
    check('post', '/v1/auth/reset-password', await anon.post('/v1/auth/reset-password', { token: await mailedToken(forgetful.email, 'reset-password'), password: 'another good password' }));

    const created = await api.post('/v1/workspaces', { name: 'OpenAPI' });
    check('post', '/v1/workspaces', created, 201);
    const ws = created.body.id;
    check('get', '/v1/workspaces', await api.get('/v1/workspaces'));
    check('get', '/v1/workspaces/{id}', await api.get(`/v1/workspaces/${ws}`));
    check('put', '/v1/workspaces/{id}', await api.put(`/v1/workspaces/${ws}`, { settings: { requireMfa: false } }));
    check('get', '/v1/workspaces/{id}/members', await api.get(`/v1/workspaces/${ws}/members`));
    const member = await signUp(server.url, 'Member');
    check('post', '/v1/workspaces/{id}/members', await api.post(`/v1/workspaces/${ws}/members`, { userId: member.id, role: 'MEMBER' }), 201);
    check('patch', '/v1/workspaces/{id}/members/{userId}', await api.patch(`/v1/workspaces/${ws}/members/${member.id}`, { role: 'ADMIN' }));
    const guest = await signUp(server.url, 'Guest');
    await confirmAddress(server, guest.email);
    const invited = await api.post(`/v1/workspaces/${ws}/invite`, { email: guest.email, role: 'MEMBER' });
    check('post', '/v1/workspaces/{id}/invite', invited, 201);
    const newcomer = `newcomer-${Date.now()}@example.com`;
    expect((await api.post(`/v1/workspaces/${ws}/invite`, { email: newcomer, role: 'MEMBER' })).status).toBe(201);
    const pending = await api.get(`/v1/workspaces/${ws}/invitations`);
    expect(pending.body.total).toBe(2);
    check('get', '/v1/workspaces/{id}/invitations', pending);
    check('post', '/v1/invitations/{invitationId}/accept', await guest.api.post(`/v1/invitations/${invited.body.invitationId}/accept`));
    check('post', '/v1/auth/accept-invitation', await anon.post('/v1/auth/accept-invitation', { token: await mailedToken(newcomer, 'accept-invitation'), name: 'Newcomer', password: 'a good password' }), 201);
    const tag = await api.post(`/v1/workspaces/${ws}/tags`, { name: 'Billing', color: '#112233' });
    check('post', '/v1/workspaces/{id}/tags', tag, 201);
    check('put', '/v1/workspaces/{id}/tags/{tagId}', await api.put(`/v1/workspaces/${ws}/tags/${tag.body.id}`, { color: '#445566' }));
    check('get', '/v1/workspaces/{id}/tags', await api.get(`/v1/workspaces/${ws}/tags`));

    const text = await api.post(`/v1/workspaces/${ws}/documents`, { title: 'Refunds', content: 'Refunds are paid within five business days.', format: 'text', tags: [tag.body.id] });
    check('post', '/v1/workspaces/{id}/documents', text, 201);
    const id = text.body.id;
    for (let i = 0; i < 300; i++) {
      const d = await api.get(`/v1/workspaces/${ws}/documents/${id}`);
      if (d.body.processingStatus === 'VERIFIED') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    check('get', '/v1/workspaces/{id}/documents', await api.get(`/v1/workspaces/${ws}/documents`));
    check('get', '/v1/workspaces/{id}/documents/{docId}', await api.get(`/v1/workspaces/${ws}/documents/${id}`));
    check('get', '/api/v1/documents/{docId}', await api.get(`/api/v1/documents/${id}`));
    check('put', '/v1/workspaces/{id}/documents/{docId}', await api.put(`/v1/workspaces/${ws}/documents/${id}`, { title: 'Refund policy' }));
    const content = await api.get(`/v1/workspaces/${ws}/documents/${id}/content`);
    check('get', '/v1/workspaces/{id}/documents/{docId}/content', content);
    check('get', '/v1/workspaces/{id}/documents/{docId}/text', await api.get(`/v1/workspaces/${ws}/documents/${id}/text`));
    const saved = await api.patch(`/v1/workspaces/${ws}/documents/${id}`, { content: 'Refunds are paid within five business days of the request.', expectedUpdatedAt: content.body.updatedAt });
    check('patch', '/v1/workspaces/{id}/documents/{docId}', saved);
    for (let i = 0; i < 300; i++) {
      const d = await api.get(`/v1/workspaces/${ws}/documents/${id}`);
      if (d.body.processingStatus === 'VERIFIED') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const found = await api.post(`/v1/workspaces/${ws}/search`, { query: 'how fast are refunds paid' });
    expect(found.body.results.length).toBeGreaterThan(0);
    check('post', '/v1/workspaces/{id}/search', found);

    const set = await api.post(`/api/workspaces/${ws}/instruction-sets`, { name: 'Tone', description: 'How we answer' });
    check('post', '/api/workspaces/{workspaceId}/instruction-sets', set, 201);
    check('post', '/api/instruction-sets/{id}/documents', await api.post(`/api/instruction-sets/${set.body.id}/documents`, { documentId: id }), 201);
    check('patch', '/api/instruction-sets/{id}/documents/reorder', await api.patch(`/api/instruction-sets/${set.body.id}/documents/reorder`, { documentIds: [id] }));
    check('patch', '/api/instruction-sets/{id}', await api.patch(`/api/instruction-sets/${set.body.id}`, { isPublic: true }));
    check('get', '/api/instruction-sets/{id}', await api.get(`/api/instruction-sets/${set.body.id}`));
    // As of a past time: the same answer, through the same codec (folded from the log).
    const setThen = await api.get(`/api/instruction-sets/${set.body.id}?asOf=${encodeURIComponent(new Date().toISOString())}`);
    expect(setThen.body.unavailableDocuments).toEqual([]);
    check('get', '/api/instruction-sets/{id}', setThen);
    check('get', '/api/workspaces/{workspaceId}/instruction-sets', await api.get(`/api/workspaces/${ws}/instruction-sets`));

    const link = await api.post(`/api/workspaces/${ws}/public-links`, { name: 'Bot', allowedTags: [tag.body.id], toolProfile: 'chatgpt', historyMode: true });
    check('post', '/api/workspaces/{workspaceId}/public-links', link, 201);
    check('patch', '/api/workspaces/{workspaceId}/public-links/{id}', await api.patch(`/api/workspaces/${ws}/public-links/${link.body.id}`, { toolProfile: 'default' }));
    check('get', '/api/workspaces/{workspaceId}/public-links/{id}', await api.get(`/api/workspaces/${ws}/public-links/${link.body.id}`));
    check('get', '/api/workspaces/{workspaceId}/public-links', await api.get(`/api/workspaces/${ws}/public-links`));

    const hits = await anon.get(`/public/${link.body.token}/search?q=refunds`);
    expect(hits.body.results.length).toBeGreaterThan(0);
    check('get', '/public/{token}/search', hits);
    check('post', '/api/v1/public/{token}/search', await anon.post(`/api/v1/public/${link.body.token}/search`, { query: 'refunds', limit: 3 }));
    const rpc = (body: unknown) => anon.post(`/mcp/${link.body.token}`, body, { accept: 'application/json, text/event-stream' });
    check('post', '/mcp/{token}', await rpc({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    check('post', '/mcp/{token}', await rpc({ jsonrpc: '2.0', id: 'call-1', method: 'tools/call', params: { name: 'service_search', arguments: { query: 'refunds' } } }));

    // The link's usage and stored queries (history mode), the workspace's analytics, audit trail and log verification.
    check('get', '/api/workspaces/{workspaceId}/public-links/{id}/usage', await api.get(`/api/workspaces/${ws}/public-links/${link.body.id}/usage`));
    const queries = await api.get(`/api/workspaces/${ws}/public-links/${link.body.id}/queries`);
    expect(queries.body.data.length).toBeGreaterThan(0);
    check('get', '/api/workspaces/{workspaceId}/public-links/{id}/queries', queries);
    // Searches are recorded without holding up the answer: wait until the link's uses are counted.
    let analytics = await api.get(`/v1/workspaces/${ws}/analytics`);
    for (let i = 0; i < 100 && (analytics.body.links?.[0]?.searches ?? 0) < 3; i++) {
      await new Promise((r) => setTimeout(r, 100));
      analytics = await api.get(`/v1/workspaces/${ws}/analytics`);
    }
    expect(analytics.body.links[0].topQueries.length).toBeGreaterThan(0);
    expect(analytics.body.topDocuments.length).toBeGreaterThan(0);
    check('get', '/v1/workspaces/{id}/analytics', analytics);
    check('get', '/v1/workspaces/{id}/audit', await api.get(`/v1/workspaces/${ws}/audit`));
    check('post', '/v1/workspaces/{id}/audit/verify', await api.post(`/v1/workspaces/${ws}/audit/verify`));

    check('post', '/v1/workspaces/{id}/documents/{docId}/process', await api.post(`/v1/workspaces/${ws}/documents/${id}/process`));

    // The service's own routes: liveness, readiness (ready here; its 503 states: test/unit/readiness.test.ts), this description.
    check('get', '/healthz', await anon.get('/healthz'));
    let ready = await anon.get('/readyz');
    for (let i = 0; i < 300 && ready.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      ready = await anon.get('/readyz');
    }
    expect(ready.body).toMatchObject({ status: 'ready', embeddings: 'ready' });
    check('get', '/readyz', ready);
    check('get', '/openapi.json', await anon.get('/openapi.json'));
    expect(checked.size).toBeGreaterThanOrEqual(64);
  });

  it('/docs is served from this process: the page, its assets, an external init script, a CSP without inline scripts', async () => {
    const page = await fetch(`${server.url}/docs`);
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/script-src[^;]*unsafe-inline/);
    const html = await page.text();
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/<script>[^<]/);
    for (const src of [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1])) {
      const a = await fetch(`${server.url}${src}`);
      expect([src, a.status]).toEqual([src, 200]);
      expect((await a.arrayBuffer()).byteLength).toBeGreaterThan(0);
    }
    expect(await (await fetch(`${server.url}/docs/init.js`)).text()).toContain("url: '/openapi.json'");
    expect((await fetch(`${server.url}/docs/package.json`)).status).toBe(404);
    expect((await fetch(`${server.url}/docs/..%2Fpackage.json`)).status).toBe(404);
  });
});
