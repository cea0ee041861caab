import * as t from 'io-ts';
import { ErrorCode } from '../../domain/errors';
import { errorStatuses } from '../errors';
import { JsonSchema, toJsonSchema } from './jsonSchema';
import { RouteDoc, RouteDocs } from './routeDocs';
import { ApiDescription, Health, Readiness } from '../responses';

/** Where a module's router is mounted (see createApp). */
export const MOUNTS = { v1: ['/v1', '/api/v1'], api: ['/api'], root: ['', '/api/v1'] } as const;
export type MountFamily = keyof typeof MOUNTS;

export interface DocumentedRouter {
  family: MountFamily;
  docs: RouteDocs;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

const toOpenApiPath = (p: string) => p.replace(/:(\w+)/g, '{$1}');

type Envelope = 'v1' | 'api' | 'public' | 'mcp';

/** The error envelope of a path (src/http/errors.ts familyOf). */
function envelopeOf(path: string): Envelope {
  const bare = path.replace(/^\/(api\/v1|v1)(?=\/(public|mcp|s)\/)/, '');
  if (bare.startsWith('/mcp/')) return 'mcp';
  if (bare !== path) return 'public';
  if (path.startsWith('/v1/') || path.startsWith('/api/v1/')) return 'v1';
  if (path.startsWith('/api/')) return 'api';
  return 'public';
}

const ENVELOPE_SCHEMAS: Record<Envelope, (codes: JsonSchema) => JsonSchema> = {
  v1: (code) => ({ type: 'object', required: ['error'], properties: { error: { type: 'object', required: ['code', 'message'], properties: { code, message: { type: 'string' }, details: { type: 'object' } } } } }),
  api: (code) => ({
    type: 'object',
    required: ['error'],
    properties: { error: { type: 'object', required: ['code', 'message', 'details', 'suggestion'], properties: { code, message: { type: 'string' }, details: { type: 'object' }, suggestion: { type: 'string' } } } },
  }),
  public: (code) => ({ type: 'object', required: ['error', 'message'], properties: { error: code, message: { type: 'string' } } }),
  mcp: () => ({
    type: 'object',
    required: ['jsonrpc', 'id', 'error'],
    properties: { jsonrpc: { const: '2.0' }, id: { type: ['string', 'integer', 'null'] }, error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'integer', enum: [-32700, -32600, -32601, -32602, -32603, -32000, -32002] }, message: { type: 'string' }, data: { type: 'object' } } } },
  }),
};

const STATUS_TEXT: Record<number, string> = { 400: 'Bad request', 401: 'Not signed in', 403: 'Forbidden', 404: 'Not found', 405: 'Method not allowed', 408: 'Request timeout', 409: 'Conflict', 413: 'Payload too large', 431: 'Request headers too large', 415: 'Unsupported media type', 423: 'Locked', 429: 'Rate limited (Retry-After)', 500: 'Internal error', 503: 'Unavailable' };

/** components.responses: one per envelope and status, the code enum naming every code with that status. */
function errorResponses(): { responses: Record<string, Record<string, unknown>>; byStatus: Map<number, ErrorCode[]> } {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const [code, status] of errorStatuses()) byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  // Codes the app itself raises for unreadable requests (src/http/app.ts).
  for (const [status, code] of [[404, 'NOT_FOUND'], [405, 'METHOD_NOT_ALLOWED'], [408, 'REQUEST_TIMEOUT'], [413, 'PAYLOAD_TOO_LARGE'], [415, 'UNSUPPORTED_MEDIA_TYPE'], [429, 'RATE_LIMITED'], [500, 'INTERNAL_ERROR']] as [number, ErrorCode][]) {
    const list = byStatus.get(status) ?? [];
    if (!list.includes(code)) byStatus.set(status, [...list, code]);
  }
  const responses: Record<string, Record<string, unknown>> = {};
  for (const env of ['v1', 'api', 'public', 'mcp'] as Envelope[]) {
    for (const [status, codes] of byStatus) {
      const schema = ENVELOPE_SCHEMAS[env]({ type: 'string', enum: [...new Set(codes)].sort() });
      responses[`${env}_${status}`] = { description: `${STATUS_TEXT[status] ?? `HTTP ${status}`}: ${[...new Set(codes)].sort().join(', ')}`, content: { 'application/json': { schema } } };
    }
  }
  return { responses, byStatus };
}

function queryParameters(codec: t.Mixed | undefined): unknown[] {
  if (!codec) return [];
  const s = toJsonSchema(codec);
  const props = (s.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((s.required as string[] | undefined) ?? []);
  return Object.entries(props).map(([name, schema]) => ({ name, in: 'query', required: required.has(name), schema }));
}

function operation(method: string, fullPath: string, doc: RouteDoc, family: MountFamily, byStatus: Map<number, ErrorCode[]>): Record<string, unknown> {
  const env = envelopeOf(fullPath);
  const auth = doc.auth ?? family !== 'root';
  const pathParams = [...fullPath.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
  const op: Record<string, unknown> = {
    operationId: `${method}${fullPath.replace(/[/:{}-]+(\w)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    tags: [fullPath.replace(/^\/(api\/v1|v1|api)(?=\/)/, '').split('/')[1] || 'service'],
    security: auth ? [{ bearerJwt: [] }, { apiKey: [] }] : [],
    parameters: [...pathParams, ...queryParameters(doc.query)],
  };
  const content: Record<string, unknown> = {};
  if (doc.body) content['application/json'] = { schema: toJsonSchema(doc.body), ...(doc.example !== undefined ? { example: doc.example } : {}) };
  if (doc.multipart) {
    content['multipart/form-data'] = {
      schema: {
        type: 'object',
        required: ['file'],
        properties: {
          file: { type: 'string', contentMediaType: 'application/octet-stream', description: '.pdf, .docx, .doc, .txt or .md (type judged from the bytes and the name)' },
          title: { type: 'string', maxLength: 255 },
          purpose: { type: 'string', enum: ['KNOWLEDGE', 'INSTRUCTION'] },
          tags: { type: 'string', description: 'Tag ids: repeated fields, or one JSON array' },
        },
      },
    };
  }
  if (Object.keys(content).length) op.requestBody = { required: true, content };
  const success = (description: string, produces: string, response: t.Mixed | undefined) =>
    produces === 'none'
      ? { description: description === 'Success' ? 'Done (no content)' : description }
      : { description, content: { [produces]: { schema: response ? toJsonSchema(response) : produces === 'application/json' ? { type: 'object' } : { type: 'string' } } } };
  const ok: Record<string, unknown> = success('Success', doc.produces ?? 'application/json', doc.response);
  if (doc.responseHeaders?.length) ok.headers = Object.fromEntries(doc.responseHeaders.map((h) => [h.name, { description: h.description, schema: h.schema }]));
  const responses: Record<string, unknown> = { [String(doc.status ?? 200)]: ok };
  for (const other of doc.otherSuccesses ?? []) {
    if (responses[String(other.status)]) throw new Error(`openapi: ${method.toUpperCase()} ${fullPath} documents status ${other.status} twice`);
    responses[String(other.status)] = success(other.description, other.produces ?? 'application/json', other.response);
  }
  const statuses = env === 'mcp' ? [400, 403, 413, 429, 500] : [...byStatus.keys()].filter((s) => auth || s !== 401);
  // A status the route documents itself (/readyz's 503 body) is not replaced by the error envelope.
  for (const s of statuses.sort()) responses[String(s)] ??= { $ref: `#/components/responses/${env}_${s}` };
  op.responses = responses;
  return op;
}

/** The app's own routes (src/http/app.ts), outside the route modules. */
export const APP_ROUTE_DOCS: RouteDocs = {
  'GET /healthz': { summary: 'Liveness: the process is up', auth: false, response: Health },
  'GET /readyz': {
    summary: 'Readiness: projections caught up with the log; during an embedding model change, its progress (`reembedding: {from, to, done, total}`)',
    description:
      '200 `ready`: the embedding model is loaded and the projections are within 1,000 events of the head of the log (`head`, `projected`); a model change under way keeps the service ready (searches use the old vectors) and shows its progress in `reembedding`. 503 otherwise, with the same body: `warming` (the model loading; `embeddings: failed` and `embeddingsError` when its load failed) or `catching_up`.',
    auth: false,
    response: Readiness,
    otherSuccesses: [{ status: 503, description: 'Not ready yet: `warming` or `catching_up` (the same body)', response: Readiness }],
  },
  'GET /metrics': { summary: 'Prometheus metrics (Bearer KB_METRICS_TOKEN when set; absent when KB_METRICS_PORT is set)', auth: false, produces: 'text/plain' },
  'GET /openapi.json': { summary: 'This API description (OpenAPI 3.1)', auth: false, response: ApiDescription },
  'GET /docs': { summary: 'Interactive API reference (Swagger UI, served from this process)', auth: false, produces: 'text/html' },
  'GET /docs/:asset': { summary: 'Files of the API reference page (Swagger UI from swagger-ui-dist, and its init script)', auth: false, produces: 'application/octet-stream' },
};

/** One documented route as the app serves it: lower-case method, full path template (`/v1/documents/:docId`). */
export interface DocumentedRoute {
  method: string;
  path: string;
  doc: RouteDoc;
  family: MountFamily;
}

/** Every route the API description covers, under each of its mount paths (the app's own routes first). */
export function documentedRoutes(routers: DocumentedRouter[]): DocumentedRoute[] {
  const out: DocumentedRoute[] = [];
  for (const [key, doc] of Object.entries(APP_ROUTE_DOCS)) {
    const [method, path] = key.split(' ');
    out.push({ method: method.toLowerCase(), path, doc, family: 'root' });
  }
  for (const r of routers) {
    for (const [key, doc] of Object.entries(r.docs)) {
      const [method, path] = key.split(' ');
      const m = method.toLowerCase();
      if (!(METHODS as readonly string[]).includes(m)) throw new Error(`openapi: unknown method in "${key}"`);
      for (const prefix of MOUNTS[r.family]) out.push({ method: m, path: `${prefix}${path}`, doc, family: r.family });
    }
  }
  return out;
}

/** The OpenAPI 3.1 document of every documented route. */
export function openApiDocument(routers: DocumentedRouter[], info: { version: string; serverUrl: string }): t.OutputOf<typeof ApiDescription> {
  const { responses, byStatus } = errorResponses();
  const paths: Record<string, Record<string, Record<string, unknown>>> = {};
  for (const { method, path: fullPath, doc, family } of documentedRoutes(routers)) {
    const p = toOpenApiPath(fullPath);
    paths[p] ??= {};
    paths[p][method] = operation(method, fullPath, doc, family, byStatus);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Knowledge base service',
      version: info.version,
      description:
        'Event-sourced knowledge base for retrieval by language models. Routes under /v1 are also served under /api/v1; public search, set pages and the tool endpoint also under /api/v1. Request schemas are generated from the io-ts codecs that validate the requests.',
    },
    servers: [{ url: info.serverUrl }],
    paths,
    components: {
      securitySchemes: {
        bearerJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token from POST /v1/auth/login.' },
        apiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'API key', description: 'An API key from POST /v1/api-keys, sent as `Authorization: Bearer <key>`.' },
      },
      responses,
    },
  };
}
