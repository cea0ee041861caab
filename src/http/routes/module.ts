import { NextFunction, Request, RequestHandler, Response, Router } from 'express';

/** Every router of the service: paths are case-sensitive (/V1/... is not /v1/...), like the app's own. */
export const router = (): Router => Router({ caseSensitive: true });
import { AppContext } from '../../app/context';
import { RouteDocs } from '../openapi/routeDocs';

/**
 * Routes of one feature. `v1` is mounted at /v1 and /api/v1; `api` at /api; `root` at /
 * (public pages, public search, the tool endpoint). Modules are mounted in the order
 * listed in ./index.ts.
 */
export interface RouteModule {
  v1?: Router;
  api?: Router;
  root?: Router;
  /** The API description of this module's routes (OpenAPI; a test checks it matches the routers). */
  docs?: RouteDocs;
}

export type RouteModuleFactory = (ctx: AppContext) => RouteModule;

/** What a layer of express's router stack shows of itself (router 2.x). */
interface StackLayer {
  rawPath?: unknown;
  route?: unknown;
}

/** Characters that make a path segment a pattern (path-to-regexp 8: parameters, wildcards, groups, reserved). */
const PATTERN = /[:*{}()[\]?+!\\]/;

/**
 * The first path segments any layer of `r` can match (`workspaces` for `/workspaces/:id`), or
 * undefined when some layer can match any path (a middleware without a path, a pattern or
 * regular expression in the first segment, a router that ignores case).
 */
function firstSegments(r: Router): Set<string> | undefined {
  if ((r as unknown as { caseSensitive?: unknown }).caseSensitive !== true) return undefined;
  const out = new Set<string>();
  for (const layer of r.stack as StackLayer[]) {
    const p = layer.rawPath;
    if (typeof p !== 'string' || !p.startsWith('/')) return undefined;
    // A middleware at '/' (router.use(fn)) runs for every path.
    if (layer.route === undefined && p === '/') return undefined;
    const first = p.slice(1).split('/')[0];
    if (PATTERN.test(first)) return undefined;
    out.add(first);
  }
  return out;
}

/** The first segment of a request's path as a router mounted here sees it (`/workspaces/x?y` → `workspaces`). */
function firstSegmentOf(url: string): string {
  let end = url.length;
  for (let i = 1; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 47 /* / */ || c === 63 /* ? */) {
      end = i;
      break;
    }
  }
  return url.slice(1, end);
}

/** What `mounted` shows of itself to the tests that walk the app's router stack. */
export interface MountedRouters {
  /** The path the routers are mounted at (a template: no ids). */
  mountPath: string;
  /** The routers, in the order they are tried. */
  routers: Router[];
}

/**
 * Several routers mounted at one path as one layer of the app: a request is passed to each
 * router one of whose layers could match its path (`firstSegments`), in order, each getting
 * the request when the one before it called `next()`; an error goes straight to the app's
 * error handling (the routers after it are not error handlers). Same answers as mounting each
 * router at `path` in turn (with `req.mountTemplate` set before it), but a request passes one
 * layer of the app's router instead of two per module (express's router costs something for
 * every layer a request passes: match, parameters, trimming and restoring the URL), and enters
 * only the routers that could serve it (express would walk every route of the others).
 */
export function mounted(path: string, routers: Router[]): RequestHandler & MountedRouters {
  let sizes: number[] = [];
  let firsts: (Set<string> | undefined)[] = [];
  const handler = (req: Request, res: Response, next: NextFunction): void => {
    // Routes are added before the app serves; recomputed should a router grow later.
    if (sizes.length !== routers.length || routers.some((r, i) => r.stack.length !== sizes[i])) {
      sizes = routers.map((r) => r.stack.length);
      firsts = routers.map(firstSegments);
    }
    const first = firstSegmentOf(req.url);
    let i = 0;
    const tryNext = (err?: unknown): void => {
      if (err !== undefined && err !== null) return next(err);
      while (i < routers.length) {
        const k = i++;
        const f = firsts[k];
        if (f !== undefined && !f.has(first)) continue;
        req.mountTemplate = path;
        routers[k](req, res, tryNext);
        return;
      }
      next();
    };
    tryNext();
  };
  return Object.assign(handler, { mountPath: path, routers });
}
