import { Router } from 'express';

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
