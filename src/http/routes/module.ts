import { Router } from 'express';
import { AppContext } from '../../app/context';

/**
 * Routes of one feature. `v1` is mounted at /v1 and /api/v1; `api` at /api; `root` at /
 * (public pages, public search, the tool endpoint). Modules are mounted in the order
 * listed in ./index.ts.
 */
export interface RouteModule {
  v1?: Router;
  api?: Router;
  root?: Router;
}

export type RouteModuleFactory = (ctx: AppContext) => RouteModule;
