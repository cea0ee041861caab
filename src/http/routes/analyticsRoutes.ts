import { Request } from 'express';
import { RouteModule, router } from './module';
import { AppContext } from '../../app/context';
import { DomainError } from '../../domain/errors';
import { authOf, requireAuth, requireWorkspaceRole } from '../auth';
import { AS_OF_FOLDS_AT_ONCE, AS_OF_WAITING_PER_WORKSPACE, Interval, workspaceAnalytics } from '../../../queries/analytics/workspaceAnalytics';
import { TurnAbandonedError, TurnQueueFullError } from '../../util/fairTurns';
import { HttpError } from '../errors';
import { clientGone } from '../clientGone';
import { RouteDocs } from '../openapi/routeDocs';
import { AnalyticsAnswer, respond } from '../responses';
import { parseIsoTime } from '../../util/isoTime';
import { consumeRateLimit } from '../rateLimit';

/**
 * An `asOf` answer folds the workspace's own events up to then (workspaceAnalytics: the
 * analytics read model is the index of its documents and searches), so its cost follows the
 * workspace's history, not the log's. Still a fold, so bounded: per workspace, and per
 * requesting user, an hour (no budget for the whole server, which one tenant could spend for
 * everybody), and folds take turns between workspaces, a few waiting per workspace
 * (asOfFoldTurns; a full queue is 429 too).
 */
export const ANALYTICS_AS_OF_PER_WORKSPACE_PER_HOUR = 10;
export const ANALYTICS_AS_OF_PER_USER_PER_HOUR = 30;

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PARAMS = new Set(['from', 'to', 'interval', 'asOf']);
const INTERVALS: ReadonlySet<string> = new Set<Interval>(['hour', 'day', 'week']);
const DEFAULT_DAYS = 30;
const invalid = (field: string, message: string) => new DomainError('VALIDATION_ERROR', message, { fields: [{ field, problem: message }] });

function single(req: Request, name: string): string | undefined {
  const v = req.query[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw invalid(name, `${name} must be given once.`);
  return v;
}

function time(req: Request, name: string): Date | undefined {
  const v = single(req, name);
  if (v === undefined) return undefined;
  const t = parseIsoTime(v);
  if (!t) throw invalid(name, `${name} must be an ISO 8601 time.`);
  return t;
}

/**
 * GET /v1/workspaces/:id/analytics?from&to&interval&asOf (ADMIN and OWNER): documents,
 * processing, searches, most-hit documents and per-link usage over [from, to), bucketed by
 * interval (hour, day or week; default day). Default range: the last 30 days. With asOf,
 * the answer as the log stood then.
 */
/** The API description of these routes. */
export const analyticsDocs: RouteDocs = {
  'GET /workspaces/:id/analytics': {
    summary: 'Workspace analytics from the log (ADMIN)',
    description:
      'Query: `from`, `to`, `asOf` (ISO 8601), `interval` (hour, day, week). ' +
      `An \`asOf\` answer folds the workspace's own events up to then: ${ANALYTICS_AS_OF_PER_WORKSPACE_PER_HOUR} per workspace and ${ANALYTICS_AS_OF_PER_USER_PER_HOUR} per requesting user per hour; ` +
      `they run ${AS_OF_FOLDS_AT_ONCE} at once, one per workspace, workspaces taking turns, and at most ${AS_OF_WAITING_PER_WORKSPACE} of a workspace wait (429 RATE_LIMITED past any of these).`,
    response: AnalyticsAnswer,
  },
};

export function analyticsRoutes(ctx: AppContext): RouteModule {
  const v1 = router();
  const asOfPerWorkspace = ctx.rateLimiter({ keyPrefix: 'analytics-as-of', points: ANALYTICS_AS_OF_PER_WORKSPACE_PER_HOUR, durationSeconds: 3600 });
  const asOfPerUser = ctx.rateLimiter({ keyPrefix: 'analytics-as-of-user', points: ANALYTICS_AS_OF_PER_USER_PER_HOUR, durationSeconds: 3600 });
  v1.get('/workspaces/:id/analytics', requireAuth(ctx), async (req, res) => {
    const raw = String(req.params.id);
    if (!ID.test(raw)) throw new DomainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
    const workspaceId = raw.toLowerCase();
    await requireWorkspaceRole(ctx, req, workspaceId, 'ADMIN');
    const unknown = Object.keys(req.query).filter((k) => !PARAMS.has(k));
    if (unknown.length) throw invalid(unknown[0], `Unknown parameter ${unknown[0]}; known: from, to, interval, asOf.`);
    const interval = single(req, 'interval') ?? 'day';
    if (!INTERVALS.has(interval)) throw invalid('interval', 'interval must be hour, day or week.');
    const asOf = time(req, 'asOf') ?? null;
    const to = time(req, 'to') ?? asOf ?? ctx.now();
    const from = time(req, 'from') ?? new Date(to.getTime() - DEFAULT_DAYS * 24 * 3600_000);
    if (from >= to) throw invalid('from', 'from must be before to.');
    if (asOf) {
      await consumeRateLimit(ctx, asOfPerUser, ANALYTICS_AS_OF_PER_USER_PER_HOUR, authOf(req).userId, res, 'analytics-as-of');
      await consumeRateLimit(ctx, asOfPerWorkspace, ANALYTICS_AS_OF_PER_WORKSPACE_PER_HOUR, workspaceId, res, 'analytics-as-of');
    }
    // A fold still waiting for its turn when its client leaves gives its place up.
    let answer;
    try {
      answer = await workspaceAnalytics(ctx, { workspaceId, from, to, interval: interval as Interval, asOf }, clientGone(res));
    } catch (err) {
      if (err instanceof TurnQueueFullError) {
        ctx.metrics.rateLimited('analytics-as-of');
        throw new HttpError(429, 'RATE_LIMITED', `${AS_OF_WAITING_PER_WORKSPACE} asOf answers of this workspace are already waiting; retry in 1 s.`, { retryAfter: 1 }, { 'Retry-After': '1' });
      }
      // The client left before its turn: nobody to answer.
      if (err instanceof TurnAbandonedError) return;
      throw err;
    }
    respond(res, AnalyticsAnswer, answer);
  });
  return { v1, docs: analyticsDocs };
}
