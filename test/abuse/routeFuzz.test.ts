import fc from 'fast-check';
import { signUp, startServer, TestServer } from '../support/server';
import { uploadVerified } from '../support/documents';

/**
 * Arbitrary JSON bodies at every JSON route of the real server: never a 5xx, and every
 * refusal in its route's envelope (decisions.md, "Errors").
 */
type Family = 'v1' | 'api' | 'public' | 'mcp';
interface Route {
  method: 'POST' | 'PUT' | 'PATCH';
  path: string;
  family: Family;
  keys: string[];
  auth: boolean;
}

const DANGEROUS_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty'];
const nastyString = fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('', ' ', '\u0000', '\ud800', '\u202e', 'x'.repeat(1200), '#12345g', '2025-01-01T00:00:00Z', 'KNOWLEDGE', 'OWNER'));
const leaf: fc.Arbitrary<unknown> = fc.oneof(nastyString, fc.integer({ min: -5, max: 60 }), fc.double(), fc.boolean(), fc.constant(null));
const value: fc.Arbitrary<unknown> = fc.oneof({ weight: 3, arbitrary: leaf }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) }, { weight: 1, arbitrary: fc.array(leaf, { maxLength: 3 }) });
/** JSON text of an object (own `__proto__` keys survive, as in a real request). */
const objectText = (keys: string[], nested: fc.Arbitrary<string>) =>
  fc
    .array(fc.tuple(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...keys) }, { weight: 1, arbitrary: fc.constantFrom(...DANGEROUS_KEYS) }, { weight: 1, arbitrary: fc.string({ maxLength: 8 }) }), fc.oneof({ weight: 4, arbitrary: value.map((v) => JSON.stringify(v) ?? 'null') }, { weight: 1, arbitrary: nested })), { maxLength: 5 })
    .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`);
const bodyFor = (keys: string[]): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 6, arbitrary: objectText(keys, objectText(keys, fc.constant('{}'))) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 1, arbitrary: fc.constantFrom('', '{', '{"a":1,}', '[]', 'null', '"x"', '{"__proto__":{"isAdmin":true}}') },
  );

function envelopeOk(family: Family, status: number, body: any): boolean {
  if (status < 400) return true;
  if (family === 'mcp') return body?.jsonrpc === '2.0' && typeof body.error?.code === 'number' && typeof body.error.message === 'string';
  if (family === 'public') return typeof body?.error === 'string' && typeof body.message === 'string';
  if (family === 'api') return typeof body?.error?.code === 'string' && typeof body.error.message === 'string' && typeof body.error.suggestion === 'string';
  return typeof body?.error?.code === 'string' && typeof body.error.message === 'string';
}

describe('arbitrary JSON bodies at every JSON route', () => {
  let server: TestServer;
  let routes: Route[];
  let token: string;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    const owner = await signUp(server.url, 'Owner');
    const other = await signUp(server.url, 'Other');
    token = owner.token;
    const api = owner.api;
    const ws = (await api.post('/v1/workspaces', { name: 'Fuzz' })).body.id;
    await api.put(`/v1/workspaces/${ws}`, { settings: { allowPublicSearchLinks: true } });
    await api.post(`/v1/workspaces/${ws}/members`, { userId: other.id, role: 'MEMBER' });
    const tag = (await api.post(`/v1/workspaces/${ws}/tags`, { name: 'Billing', color: '#112233' })).body.id;
    const doc = await uploadVerified(api, ws, 'doc.md', '# Refunds\n\nRefunds are paid within five days.', [tag]);
    const set = (await api.post(`/api/workspaces/${ws}/instruction-sets`, { name: 'Set' })).body.id;
    const link = (await api.post(`/api/workspaces/${ws}/public-links`, { name: 'Link' })).body;
    const r = (method: Route['method'], path: string, family: Family, keys: string[], auth = true): Route => ({ method, path, family, keys, auth });
    routes = [
      r('POST', '/v1/auth/register', 'v1', ['email', 'password', 'name'], false),
      r('POST', '/v1/auth/login', 'v1', ['email', 'password'], false),
      r('POST', '/v1/auth/refresh', 'v1', ['refreshToken'], false),
      r('POST', '/v1/auth/logout', 'v1', ['refreshToken'], false),
      r('POST', '/v1/api-keys', 'v1', ['name']),
      r('POST', '/v1/workspaces', 'v1', ['name']),
      r('PUT', `/v1/workspaces/${ws}`, 'v1', ['name', 'settings', 'allowPublicSearchLinks', 'defaultDocumentPurpose']),
      r('POST', `/v1/workspaces/${ws}/members`, 'v1', ['userId', 'role']),
      r('PATCH', `/v1/workspaces/${ws}/members/${other.id}`, 'v1', ['role']),
      r('POST', `/v1/workspaces/${ws}/invite`, 'v1', ['email', 'role']),
      r('POST', `/v1/workspaces/${ws}/transfer-ownership`, 'v1', ['userId']),
      r('POST', `/v1/workspaces/${ws}/audit/verify`, 'v1', ['deep']),
      r('POST', '/v1/auth/console/session/mfa', 'v1', ['challenge', 'code'], false),
      r('POST', `/v1/workspaces/${ws}/tags`, 'v1', ['name', 'color']),
      r('PUT', `/v1/workspaces/${ws}/tags/${tag}`, 'v1', ['name', 'color']),
      r('PUT', `/v1/workspaces/${ws}/documents/${doc}`, 'v1', ['title', 'purpose', 'tags']),
      r('PATCH', `/v1/workspaces/${ws}/documents/${doc}`, 'v1', ['content', 'expectedUpdatedAt']),
      r('POST', `/v1/workspaces/${ws}/search`, 'v1', ['query', 'limit', 'filters', 'tags', 'purpose', 'documentIds']),
      r('POST', `/api/v1/workspaces/${ws}/search`, 'v1', ['query', 'limit', 'filters']),
      r('POST', `/api/workspaces/${ws}/instruction-sets`, 'api', ['name', 'description', 'isPublic']),
      r('PATCH', `/api/instruction-sets/${set}`, 'api', ['name', 'description', 'isPublic', 'expectedUpdatedAt']),
      r('POST', `/api/instruction-sets/${set}/documents`, 'api', ['documentId']),
      r('PATCH', `/api/instruction-sets/${set}/documents/reorder`, 'api', ['documentIds']),
      r('POST', `/api/workspaces/${ws}/public-links`, 'api', ['name', 'allowedTags', 'expiresAt', 'historyMode']),
      r('PATCH', `/api/workspaces/${ws}/public-links/${link.id}`, 'api', ['name', 'allowedTags', 'expiresAt', 'historyMode']),
      r('POST', `/public/${link.token}/search`, 'public', ['query', 'limit', 'tags'], false),
      r('POST', `/api/v1/public/${link.token}/search`, 'public', ['query', 'limit', 'tags'], false),
      r('POST', `/mcp/${link.token}`, 'mcp', ['jsonrpc', 'id', 'method', 'params', 'name', 'arguments', 'query', 'limit', 'tags'], false),
    ];
  });
  afterAll(async () => server?.stop());

  it('never answers 5xx, and refuses in the route family\'s envelope', async () => {
    const failures: string[] = [];
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 10_000 }).chain((i) => {
          const route = routes[i % routes.length];
          return bodyFor(route.keys).map((body) => ({ route, body }));
        }),
        async ({ route, body }) => {
          const res = await fetch(server.url + route.path, {
            method: route.method,
            headers: { 'content-type': 'application/json', ...(route.auth ? { authorization: `Bearer ${token}` } : {}) },
            body,
          });
          const text = await res.text();
          let parsed: any;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          const ok = res.status < 500 && envelopeOk(route.family, res.status, parsed) && !/\n\s+at /.test(text);
          if (!ok) failures.push(`${route.method} ${route.path} ${body} → ${res.status} ${text.slice(0, 300)}`);
          return ok;
        },
      ),
      { numRuns: 200 },
    );
    expect(failures).toEqual([]);
    expect(server.output()).not.toContain('unhandled error');
  });
});
