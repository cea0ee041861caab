import { RouteDocs } from '../openapi/routeDocs';
import { Request } from 'express';
import { RouteModule, router } from './module';
import { AppContext } from '../../app/context';
import { DomainError } from '../../domain/errors';
import { authOf, requireAuth, requireWorkspaceRole } from '../auth';
import { decodeCursor, listAuditEntries } from '../../audit/auditQueries';
import { verifyLogFor, VERIFY_LOG_PER_USER_PER_HOUR, VERIFY_LOG_PER_WORKSPACE_PER_HOUR, WALK_GAP_FACTOR, WALK_GAP_MAX_MS } from '../../audit/verifyLog';
import { consumeRateLimit } from '../rateLimit';
import { decode, strict } from '../codecs';
import * as t from 'io-ts';
import { UUID_PATTERN } from '../../domain/ids';
import { AuditPage, LogVerificationAnswer, respond } from '../responses';
import { parseIsoTime } from '../../util/isoTime';

const ID = UUID_PATTERN;

const VerifyBody = strict(t.partial({}));

/** The API description of these routes. */
export const auditDocs: RouteDocs = {
  'GET /workspaces/:id/audit': { summary: 'The audit trail of a workspace (ADMIN)', description: 'Query: `subject`, `action`, `actor`, `from`, `to` (ISO 8601), `cursor`, `limit`.', response: AuditPage },
  'POST /workspaces/:id/audit/verify': {
    summary: "Verify the event log's hash chain (OWNER)",
    description:
      'Walks the whole log up to its head (the chain runs through every workspace, so only the whole walk shows that nothing was edited, inserted or removed) and answers `{ok, checked, workspaceEvents, headPosition, firstBreak, startedAt, finishedAt}`. ' +
      "A break in another workspace's event is given by position only. The walk yields between batches and one runs at a time (concurrent requests share it); " +
      `after a walk the next starts no sooner than ${WALK_GAP_FACTOR} times its duration later (at most ${WALK_GAP_MAX_MS / 1000} s), every request waiting by then sharing it, so walks take at most a tenth of the time whoever asks. ` +
      `${VERIFY_LOG_PER_WORKSPACE_PER_HOUR} per workspace and ${VERIFY_LOG_PER_USER_PER_HOUR} per requesting user per hour (429 RATE_LIMITED). 501 LOG_VERIFICATION_UNAVAILABLE with KB_EVENT_STORE=eventstoredb.`,
    body: VerifyBody,
    response: LogVerificationAnswer,
  },
};

const invalid = (field: string, message: string) => new DomainError('VALIDATION_ERROR', message, { field });

function single(req: Request, name: string): string | undefined {
  const v = req.query[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw invalid(name, `${name} must be given once.`);
  return v;
}

function isoParam(req: Request, name: string): string | undefined {
  const v = single(req, name);
  if (v === undefined) return undefined;
  const t = parseIsoTime(v);
  if (!t) throw invalid(name, `${name} must be an ISO 8601 time.`);
  return t.toISOString();
}

/** GET /v1/workspaces/:id/audit: who did what, when, in a workspace (ADMIN and OWNER). */
export function auditRoutes(ctx: AppContext): RouteModule {
  const v1 = router();
  v1.get('/workspaces/:id/audit', requireAuth(ctx), async (req, res) => {
    const raw = String(req.params.id);
    if (!ID.test(raw)) throw new DomainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
    const workspaceId = raw.toLowerCase();
    await requireWorkspaceRole(ctx, req, workspaceId, 'ADMIN');

    const limitRaw = single(req, 'limit');
    const limit = limitRaw === undefined ? 50 : /^\d{1,3}$/.test(limitRaw) ? Number(limitRaw) : NaN;
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw invalid('limit', 'limit must be an integer from 1 to 200.');
    const cursorRaw = single(req, 'cursor');
    const beforePosition = cursorRaw === undefined || cursorRaw === '' ? undefined : decodeCursor(cursorRaw);
    if (beforePosition === null) throw invalid('cursor', 'cursor is not one this endpoint returned.');
    const action = single(req, 'action');
    const page = await listAuditEntries(ctx, {
      workspaceId,
      from: isoParam(req, 'from'),
      to: isoParam(req, 'to'),
      actor: single(req, 'actor') || undefined,
      actions: action ? action.split(',').map((a) => a.trim()).filter(Boolean) : undefined,
      subject: single(req, 'subject') || undefined,
      beforePosition,
      limit,
    });
    respond(res, AuditPage, page);
  });

  const perWorkspace = ctx.rateLimiter({ keyPrefix: 'verify-log', points: VERIFY_LOG_PER_WORKSPACE_PER_HOUR, durationSeconds: 3600 });
  const perUser = ctx.rateLimiter({ keyPrefix: 'verify-log-user', points: VERIFY_LOG_PER_USER_PER_HOUR, durationSeconds: 3600 });
  v1.post('/workspaces/:id/audit/verify', requireAuth(ctx), async (req, res) => {
    const raw = String(req.params.id);
    if (!ID.test(raw)) throw new DomainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
    const workspaceId = raw.toLowerCase();
    await requireWorkspaceRole(ctx, req, workspaceId, 'OWNER');
    decode(VerifyBody, req.body ?? {});
    // The user's point first: a user over their own limit spends none of a shared workspace's.
    await consumeRateLimit(ctx, perUser, VERIFY_LOG_PER_USER_PER_HOUR, authOf(req).userId, res, 'verify-log');
    await consumeRateLimit(ctx, perWorkspace, VERIFY_LOG_PER_WORKSPACE_PER_HOUR, workspaceId, res, 'verify-log');
    respond(res, LogVerificationAnswer, await verifyLogFor(ctx, workspaceId));
  });
  return { v1, docs: auditDocs };
}
