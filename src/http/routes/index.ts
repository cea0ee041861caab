import { RouteModuleFactory } from './module';
import { authRoutes } from './authRoutes';
import { consoleAuthRoutes } from './consoleAuthRoutes';
import { workspaceRoutes } from './workspaceRoutes';
import { documentRoutes } from './documentRoutes';
import { searchRoutes } from './searchRoutes';
import { instructionSetRoutes } from './instructionSetRoutes';
import { publicSetRoutes } from './publicSetRoutes';
import { searchLinkRoutes } from './searchLinkRoutes';
import { publicSearchRoutes } from './publicSearchRoutes';
import { mcpRoutes } from './mcpRoutes';
import { auditRoutes } from './auditRoutes';
import { analyticsRoutes } from './analyticsRoutes';

/** Every feature's routes, in mounting order (public set pages before search-link pages on /s/:id). */
export const routeModules: RouteModuleFactory[] = [
  authRoutes,
  consoleAuthRoutes,
  workspaceRoutes,
  documentRoutes,
  searchRoutes,
  instructionSetRoutes,
  searchLinkRoutes,
  auditRoutes,
  analyticsRoutes,
  mcpRoutes,
  publicSetRoutes,
  publicSearchRoutes,
];
