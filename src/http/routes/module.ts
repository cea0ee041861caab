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

/**
 * `r` behind a check of the path's first segment: a request none of its layers could match
 * passes it by without entering it (express would walk every route of it and match none).
 * Same answers as mounting `r` itself (it is entered for every path one of its layers could
 * match, and a router is passed over by errors either way); only cheaper for the many
 * requests each module's router does not serve. `router` and `stack` are `r`'s own (walked
 * by the tests that compare the routes with the API description).
 */
export function entered(r: Router): RequestHandler & { router: Router; stack: unknown[] } {
  let size = -1;
  let firsts: Set<string> | undefined;
  const handler = (req: Request, res: Response, next: NextFunction): void => {
    // Routes are added before the app serves; recomputed should a router grow later.
    if (r.stack.length !== size) {
      size = r.stack.length;
      firsts = firstSegments(r);
    }
    if (firsts !== undefined && !firsts.has(firstSegmentOf(req.url))) return next();
    r(req, res, next);
  };
  return Object.assign(handler, { router: r, stack: r.stack });
}
