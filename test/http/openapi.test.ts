import path from 'node:path';
import { execFile } from 'node:child_process';
import Ajv2020 from 'ajv/dist/2020';
import { client, startServer, TestServer } from '../support/server';

const root = path.resolve(__dirname, '..', '..');

/** Run a node child in the repository (jest here is CommonJS; some dependencies are ES modules). */
function node(args: string[], input?: string): Promise<string> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, args, { cwd: root, maxBuffer: 16 * 1024 * 1024 }, (_err, stdout, stderr) => resolve(stdout + stderr));
    child.stdin?.end(input ?? '');
  });
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
  });

  it('every request example decodes with the codec it documents', () => {
    expect(walked.examples.length).toBeGreaterThan(10);
    expect(walked.examples.filter((e) => e.problem !== null)).toEqual([]);
  });

  it('real answers validate against the response schemas where they are described', async () => {
    // ajv (2020-12 drafts, as OpenAPI 3.1 uses) comes with swagger-parser's dependencies.
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const check = (method: string, p: string, status: number, body: unknown) => {
      const schema = doc.paths[p][method].responses[String(status)].content['application/json'].schema;
      expect(schema.type).toBe('object');
      const ok = ajv.validate(schema, body);
      expect([p, ok ? null : ajv.errorsText()]).toEqual([p, null]);
      // The schema can fail: a field of the wrong type is refused.
      expect(ajv.validate(schema, { ...(body as object), [Object.keys(schema.properties)[0]]: { wrong: true } })).toBe(false);
    };
    const anon = client(server.url);
    const email = `openapi-${Date.now()}@example.com`;
    const reg = await anon.post('/v1/auth/register', { email, password: 'correct horse battery', name: 'Open' });
    check('post', '/v1/auth/register', 201, reg.body);
    const login = await anon.post('/v1/auth/login', { email, password: 'correct horse battery' });
    check('post', '/v1/auth/login', 200, login.body);
    const api = client(server.url, login.body.accessToken);
    const ws = (await api.post('/v1/workspaces', { name: 'OpenAPI' })).body.id;
    const created = await api.post(`/v1/workspaces/${ws}/documents`, { title: 'Refunds', content: 'Refunds are paid within five business days.', format: 'text' });
    check('post', '/v1/workspaces/{id}/documents', 201, created.body);
    for (let i = 0; i < 300; i++) {
      const d = await api.get(`/v1/workspaces/${ws}/documents/${created.body.id}`);
      if (d.body.processingStatus === 'VERIFIED') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    check('get', '/v1/workspaces/{id}/documents', 200, (await api.get(`/v1/workspaces/${ws}/documents`)).body);
    const found = await api.post(`/v1/workspaces/${ws}/search`, { query: 'how fast are refunds paid' });
    expect(found.body.results.length).toBeGreaterThan(0);
    check('post', '/v1/workspaces/{id}/search', 200, found.body);
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
