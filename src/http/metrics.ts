import { createHash, timingSafeEqual } from 'node:crypto';
import { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppContext } from '../app/context';
import { HttpError } from './errors';

declare module 'express-serve-static-core' {
  interface Request {
    /** The path a router was mounted at by the app (a template: no ids), set just before it runs. */
    mountTemplate?: string;
  }
}

/** Middleware placed before a mounted router: remembers the mount path (static) for the route label. */
export const mountedAt = (path: string): RequestHandler & { mountPath: string } =>
  Object.assign(
    (req: Request, _res: Response, next: NextFunction) => {
      req.mountTemplate = path;
      next();
    },
    // Read by the test that walks the app's router stack against the API description.
    { mountPath: path },
  );

/** Route templates of the app, to name a request that was answered before its route ran. */
export interface RouteTemplateIndex {
  /** The template serving `method path` (a path without its query), or undefined when none would. */
  match(method: string, path: string): string | undefined;
}

/**
 * An index of route templates (`{ method: 'get', path: '/v1/documents/:docId' }`, as the API
 * description lists them). A path that several templates match gets the most literal one
 * (`/workspaces/:id/members/me` before `/workspaces/:id/members/:userId`), like the router's
 * static routes registered first.
 */
export function routeTemplateIndex(routes: readonly { method: string; path: string }[]): RouteTemplateIndex {
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const compiled = routes.map((r) => {
    const segments = r.path.split('/').filter(Boolean);
    const pattern = segments.map((seg) => (seg.startsWith(':') ? '/[^/]+' : `/${escape(seg)}`)).join('');
    return { method: r.method.toUpperCase(), template: r.path, regex: new RegExp(`^${pattern || ''}/?$`), literals: segments.filter((seg) => !seg.startsWith(':')).length };
  });
  compiled.sort((a, b) => b.literals - a.literals);
  return {
    match(method, path) {
      const m = method === 'HEAD' ? 'GET' : method;
      return compiled.find((c) => c.method === m && c.regex.test(path))?.template;
    },
  };
}

/**
 * The route template of a request (`/v1/documents/:docId/file`): the matched route's path
 * joined with its router's mount path; for a request answered before its route ran (a 401
 * from the auth guard of a router, a 429 from the write limit), the template that would have
 * served it. Never the raw path: a request no template serves is `unmatched`.
 */
export function routeTemplateOf(req: Request, templates?: RouteTemplateIndex): string {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof path !== 'string') {
    // originalUrl: express rewrites req.url while a mounted router runs.
    return templates?.match(req.method, req.originalUrl.split('?')[0]) ?? 'unmatched';
  }
  const mount = req.mountTemplate === undefined || req.mountTemplate === '/' ? '' : req.mountTemplate;
  return `${mount}${path}` || '/';
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Records an answered request: method, route template, status, duration (called once it has finished). */
export function recordRequest(ctx: AppContext, req: Request, res: Response, seconds: number, templates?: RouteTemplateIndex): void {
  const method = METHODS.has(req.method) ? req.method : 'OTHER';
  ctx.metrics.httpRequest({ method, route: routeTemplateOf(req, templates), status: res.statusCode, seconds });
}

/** Constant-time check of `Authorization: Bearer <token>` against the token's SHA-256. */
function bearerMatches(header: string | undefined, tokenSha256: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  const presented = createHash('sha256').update(m ? m[1] : '', 'utf8').digest();
  return timingSafeEqual(presented, Buffer.from(tokenSha256, 'hex')) && m !== null;
}

/** GET /metrics: the Prometheus exposition; with KB_METRICS_TOKEN set, only for a request bearing it. */
export function metricsHandler(ctx: AppContext): RequestHandler {
  return async (req, res, next) => {
    try {
      const tokenSha256 = ctx.config.metrics.tokenSha256;
      if (tokenSha256 !== undefined && !bearerMatches(req.headers.authorization, tokenSha256)) {
        throw new HttpError(401, 'UNAUTHORIZED', 'The metrics need `Authorization: Bearer <KB_METRICS_TOKEN>`.', undefined, { 'WWW-Authenticate': 'Bearer realm="metrics"' });
      }
      const { contentType, body } = await ctx.metrics.exposition();
      res.setHeader('Content-Type', contentType);
      res.setHeader('Cache-Control', 'no-store');
      res.send(body);
    } catch (err) {
      next(err);
    }
  };
}
