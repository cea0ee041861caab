import express, { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import { AppContext } from '../app/context';
import { redactUrl } from '../app/logger';
import { DomainError, ErrorCode } from '../domain/errors';
import { bodyDeadline } from './bodyDeadline';
import { jsonBody } from './jsonBody';
import { clientErrorStatus, familyOf, HttpError, sendError } from './errors';
import { readinessHandler } from './readiness';
import { Health, respond } from './responses';
import { writeRateLimit } from './rateLimit';
import { consoleRouter } from './console';
import { metricsHandler, mountedAt, recordRequest, RouteTemplateIndex, routeTemplateIndex } from './metrics';
import { apiDocsRoutes, documentedRouters } from './apiDocs';
import { documentedRoutes } from './openapi/generate';
import { routeModules } from './routes';
import { mounted } from './routes/module';
import './types';

const JSON_LIMIT = '1mb';
/** JSON_LIMIT in bytes (as the `bytes` package reads '1mb'). */
const JSON_LIMIT_BYTES = 1024 * 1024;
const REQUEST_ID = /^[\w.-]{1,100}$/;

const CLIENT_ERROR_CODES: Partial<Record<number, ErrorCode>> = {
  400: 'VALIDATION_ERROR',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  408: 'REQUEST_TIMEOUT',
  409: 'CONFLICT',
  411: 'LENGTH_REQUIRED',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
};

/** Our own words for what went wrong reading a request (never the raw message: it may quote input). */
function clientErrorMessage(status: number, type: unknown): string {
  switch (type) {
    case 'entity.parse.failed':
      return 'Malformed JSON in the request body.';
    case 'entity.too.large':
      return `The request body exceeds ${JSON_LIMIT}.`;
    case 'encoding.unsupported':
      return 'Unsupported Content-Encoding; send identity, gzip, deflate or br.';
    case 'charset.unsupported':
      return 'Unsupported charset in Content-Type; send UTF-8.';
    case 'request.aborted':
      return 'The request was aborted before its body was read.';
    case 'request.size.invalid':
      return 'The request body does not match its Content-Length.';
  }
  if (status === 400) return 'The request body could not be read (is its Content-Encoding right?).';
  return `The request could not be processed (HTTP ${status}).`;
}

export function createApp(ctx: AppContext): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  // Behind a reverse proxy every client has the proxy's address: per-address limits (the tool
  // endpoint's 100 per minute, unknown tokens, public set pages) would be one budget for all,
  // and one client guessing tokens would lock every other out. KB_TRUST_PROXY names the proxies
  // whose X-Forwarded-For to believe (off by default: a client cannot choose its address).
  if (ctx.config.trustProxy !== false) app.set('trust proxy', ctx.config.trustProxy);
  // /V1/... is not /v1/...: one spelling per route (every Router is case-sensitive too: routes/module.ts).
  app.set('case sensitive routing', true);

  // Requests answered before their route ran are labelled by the template that would have served them (set once the routes exist).
  const routes: { templates?: RouteTemplateIndex } = {};
  // Every request's own bookkeeping, in one layer (each layer of express's router costs a little on every request):
  // - a correlation id, and an access log with secrets scrubbed (no tokens, no query text);
  // - the request's metrics (method, route template, status, duration) once answered;
  // - headers: every answer may carry a token, a key or a tenant's data: never cached, never
  //   sniffed, and no URL (search-link tokens are in paths) leaks through a Referer (the
  //   console's hashed assets set their own long-lived caching);
  // - no CORS (the service answers its own origin only): OPTIONS is refused in the envelope
  //   rather than answered by express's automatic, unauthenticated "Allow". The tool endpoint is
  //   the exception the spec names ("OPTIONS is accepted"): its route answers it.
  app.use((req: Request, res: Response, next: NextFunction) => {
    const incoming = req.headers['x-request-id'];
    req.correlationId = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', req.correlationId);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      if (ctx.logger.isLevelEnabled('info')) {
        ctx.logger.info({ reqId: req.correlationId, method: req.method, path: redactUrl(req.originalUrl), status: res.statusCode, ms: seconds * 1000 }, 'request');
      }
      recordRequest(ctx, req, res, seconds, routes.templates);
    });
    if (!req.path.startsWith('/app/assets/')) res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    const refused = req.method === 'OPTIONS' && familyOf(req.path) !== 'mcp';
    next(refused ? new HttpError(405, 'METHOD_NOT_ALLOWED', 'OPTIONS is not supported: this API answers no cross-origin requests.') : undefined);
  });

  app.use(writeRateLimit(ctx));

  app.get('/healthz', (_req, res) => {
    respond(res, Health, { status: 'ok' });
  });
  app.get('/readyz', readinessHandler(ctx));
  // The web console (README "Web console"): static files and history fallback under /app.
  app.get('/', (_req, res) => res.redirect(302, '/app/'));
  // The mailed links (KB_APP_URL + these paths, commands/user/identityMailer.ts) open the console's pages, token in the query.
  // Pages, not API routes: a middleware (the API description lists routes only).
  const mailedPages = new Set(['/verify-email', '/reset-password', '/accept-invitation']);
  app.use((req, res, next) => {
    if (req.method !== 'GET' || !mailedPages.has(req.path)) return next();
    const q = req.originalUrl.indexOf('?');
    res.redirect(302, `/app${req.path}${q >= 0 ? req.originalUrl.slice(q) : ''}`);
  });
  app.use('/app', mountedAt('/app'), consoleRouter());
  // Prometheus metrics; with KB_METRICS_PORT they are served on that listener only (main.ts).
  if (ctx.config.metrics.port === undefined) app.get('/metrics', metricsHandler(ctx));

  // A body must arrive within KB_BODY_TIMEOUT_MS (uploads lengthen their own limit): 408 in the route's envelope.
  app.use(bodyDeadline(ctx.config.bodyTimeoutMs));

  // JSON bodies for every route but the tool endpoint (it reads its own raw body for -32700).
  // The common request (application/json, UTF-8, not compressed, with a length) is read by jsonBody; every other by express.json.
  const json = jsonBody(JSON_LIMIT_BYTES, express.json({ limit: JSON_LIMIT, type: ['application/json', 'application/*+json'] }));
  app.use((req, res, next) => (/^(\/api\/v1)?\/mcp\//.test(req.path) ? next() : json(req, res, next)));

  const modules = routeModules.map((f) => f(ctx));
  routes.templates = routeTemplateIndex(documentedRoutes(documentedRouters(modules)));
  // The API description (generated from the codecs the routes validate with) and its reference page.
  apiDocsRoutes(app, ctx, modules);
  // Each mount path is one layer (`mounted`), entering each module's router only for paths one
  // of its layers could match, in module order: a request to the last module would otherwise be
  // matched against every route of the modules before it, and pass two layers for each of them.
  const v1 = modules.flatMap((m) => (m.v1 ? [m.v1] : []));
  const api = modules.flatMap((m) => (m.api ? [m.api] : []));
  const root = modules.flatMap((m) => (m.root ? [m.root] : []));
  if (v1.length) {
    app.use('/v1', mounted('/v1', v1));
    app.use('/api/v1', mounted('/api/v1', v1));
  }
  if (api.length) app.use('/api', mounted('/api', api));
  if (root.length) {
    app.use('/', mounted('/', root));
    // A self-hosted base URL ends in /api/v1: public search, set pages and the tool endpoint answer there too.
    app.use('/api/v1', mounted('/api/v1', root));
  }

  app.use((req: Request, _res: Response, next: NextFunction) => {
    const where = `${req.method} ${redactUrl(req.path)}`;
    // Under the tool endpoint's prefix the answer is a JSON-RPC error (errors.ts, sendError): say where the endpoint is.
    const message = familyOf(req.path) === 'mcp' ? `Not found: nothing answers ${where}; the tool endpoint is POST /mcp/<token>.` : `No route for ${where}.`;
    next(new HttpError(404, 'NOT_FOUND', message));
  });

  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) return;
    if (err instanceof DomainError) return sendError(req, res, err);
    if (err instanceof URIError) {
      // A path parameter with a broken %-escape: the client's mistake. Its message may hold a token: never log or echo it.
      if (familyOf(req.path) === 'mcp') {
        res.status(400).json({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid request: malformed URL encoding' } });
        return;
      }
      return sendError(req, res, new HttpError(400, 'VALIDATION_ERROR', 'Malformed percent-encoding in the URL path.'));
    }
    // Errors raised by body parsers and other middleware carry their own 4xx status
    // (corrupt gzip/deflate/br bodies, unsupported encodings or charsets, aborted bodies ...).
    const status = clientErrorStatus(err);
    if (status !== undefined) {
      const message = clientErrorMessage(status, (err as { type?: unknown }).type);
      if (familyOf(req.path) === 'mcp') {
        res.status(status).json({ jsonrpc: '2.0', id: null, error: { code: status === 400 ? -32700 : -32600, message } });
        return;
      }
      return sendError(req, res, new HttpError(status, CLIENT_ERROR_CODES[status] ?? 'BAD_REQUEST', message));
    }
    ctx.logger.error({ err, reqId: req.correlationId, path: redactUrl(req.path) }, 'unhandled error');
    if (familyOf(req.path) === 'mcp') {
      res.status(500).json({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } });
      return;
    }
    sendError(req, res, new HttpError(500, 'INTERNAL_ERROR', 'Something went wrong on our side.'));
  });
  return app;
}
