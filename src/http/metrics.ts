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

/**
 * The route template of a request (`/v1/documents/:docId/file`): the matched route's path
 * joined with its router's mount path. Never the raw path: a request no route matched (a
 * 404, or one refused by middleware before its route) is `unmatched`.
 */
export function routeTemplateOf(req: Request): string {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof path !== 'string') return 'unmatched';
  const mount = req.mountTemplate === undefined || req.mountTemplate === '/' ? '' : req.mountTemplate;
  return `${mount}${path}` || '/';
}

/** Records every answered request: method, route template, status, duration. */
export function requestMetrics(ctx: AppContext): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const method = /^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)$/.test(req.method) ? req.method : 'OTHER';
      ctx.metrics.httpRequest({ method, route: routeTemplateOf(req), status: res.statusCode, seconds: Number(process.hrtime.bigint() - started) / 1e9 });
    });
    next();
  };
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
