import { RouteDocs } from '../openapi/routeDocs';
import { Request } from 'express';
import * as t from 'io-ts';
import { AppContext } from '../../app/context';
import { DomainError, ErrorCode } from '../../domain/errors';
import { tokenVault } from '../../security/tokenVault';
import { getSearchLink, listSearchLinks, searchLinkView } from '../../../queries/searchLink/searchLinkQueries';
import { linkUsageReport, MAX_QUERY_HISTORY_PAGE, storedQueryPage } from '../../../queries/searchLink/linkUsage';
import { requireAuth, requireWorkspaceRole } from '../auth';
import { decode, HumanName, IntFromString, IsoDateString, lengthFirstArray, strict } from '../codecs';
import { commandContext } from '../exec';
import { createSearchLink } from '../../../commands/searchLink/createSearchLink';
import { updateSearchLink } from '../../../commands/searchLink/updateSearchLink';
import { revokeSearchLink } from '../../../commands/searchLink/revokeSearchLink';
import { RouteModule, router } from './module';
import { LinkQueryPage, LinkUsage, respond, SearchLink, SearchLinkList } from '../responses';
import { Uuid } from '../ids';
import { UUID_PATTERN } from '../../domain/ids';

const ID = UUID_PATTERN;

/** historyMode as a boolean, or the spec's words ON / OFF. */
const HistoryMode = new t.Type<boolean, boolean, unknown>(
  'HistoryMode(boolean|ON|OFF)',
  (u): u is boolean => typeof u === 'boolean',
  (u, c) => (typeof u === 'boolean' ? t.success(u) : u === 'ON' ? t.success(true) : u === 'OFF' ? t.success(false) : t.failure(u, c, 'must be true/false or ON/OFF')),
  (b) => b,
);
const Tags = lengthFirstArray(Uuid, 1000); // the use case allows 100; this bounds the work of refusing more
const Fields = {
  name: t.union([t.null, HumanName(200, 0)]),
  allowedTags: t.union([t.null, Tags]),
  expiresAt: t.union([t.null, IsoDateString]),
  historyMode: HistoryMode,
  /** The tools of the link's tool endpoint: `default` (service_search) or `chatgpt` (search + fetch). */
  toolProfile: t.keyof({ default: null, chatgpt: null }),
};
const CreateBody = strict(t.partial(Fields));
const PatchBody = strict(t.partial(Fields));

/** The JSON body codecs of these routes (property tests walk them). */
export const searchLinkBodies = { CreateBody, PatchBody };

const UsageQuery = t.partial({ hours: t.refinement(IntFromString, (n) => n >= 1 && n <= 24 * 90, 'hours 1..2160') });
const QueriesQuery = strict(t.partial({ limit: t.refinement(IntFromString, (n) => n >= 1 && n <= MAX_QUERY_HISTORY_PAGE, `limit 1..${MAX_QUERY_HISTORY_PAGE}`), before: IsoDateString }));

/** The API description of these routes (schemas from the codecs above). */
export const searchLinkDocs: RouteDocs = {
  'POST /workspaces/:workspaceId/public-links': {
    summary: 'Create a public search link (ADMIN); its token is its credential',
    description: '`toolProfile`: the tools of the link\'s tool endpoint (/mcp/<token>): `default` (service_search) or `chatgpt` (search + fetch, as ChatGPT connectors and deep research require).',
    body: CreateBody,
    status: 201,
    response: SearchLink,
    example: { name: 'Billing bot', allowedTags: [], historyMode: false, toolProfile: 'chatgpt' },
  },
  'GET /workspaces/:workspaceId/public-links': { summary: 'Public search links of a workspace (ADMIN)', response: SearchLinkList },
  'GET /workspaces/:workspaceId/public-links/:id': { summary: 'One public search link (ADMIN)', response: SearchLink },
  'PATCH /workspaces/:workspaceId/public-links/:id': { summary: "Change a link's name, scope, expiry, history mode or tool profile (ADMIN)", body: PatchBody, response: SearchLink, example: { toolProfile: 'default' } },
  'DELETE /workspaces/:workspaceId/public-links/:id': { summary: 'Revoke a link (ADMIN)', status: 204, produces: 'none' },
  'GET /workspaces/:workspaceId/public-links/:id/usage': {
    summary: "A link's usage (ADMIN)",
    description: 'Requests, errors, channels, latency and distinct clients over the last `hours` hours (default 24), in total and per hour.',
    query: UsageQuery,
    response: LinkUsage,
  },
  'GET /workspaces/:workspaceId/public-links/:id/queries': {
    summary: "A link's query history (ADMIN; stored only while its history mode is on)",
    description: `Newest first: \`{data: [{query, at}], nextBefore, retentionDays, historyMode}\`; \`limit\` 1..${MAX_QUERY_HISTORY_PAGE} (default 50), \`before\` (ISO time: pass \`nextBefore\` for the next page). Query text is kept 90 days, outside the event log.`,
    query: QueriesQuery,
    response: LinkQueryPage,
  },
};

function pathId(req: Request, name: string, code: ErrorCode, what: string): string {
  const id = String(req.params[name]);
  if (!ID.test(id)) throw new DomainError(code, `${what} not found.`);
  return id.toLowerCase();
}

export function searchLinkRoutes(ctx: AppContext): RouteModule {
  // Load (or create) the token key now: a malformed KB_LINK_TOKEN_KEY stops start-up, not a request.
  tokenVault(ctx);
  const api = router();
  api.use('/workspaces/:workspaceId/public-links', requireAuth(ctx), async (req, _res, next) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    await requireWorkspaceRole(ctx, req, workspaceId, 'ADMIN');
    next();
  });

  const cc = (req: Request) => commandContext(ctx, req);

  api.post('/workspaces/:workspaceId/public-links', async (req, res) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    const { link, token } = await createSearchLink(ctx, cc(req), workspaceId, () => decode(CreateBody, req.body ?? {}));
    respond(res, SearchLink, await searchLinkView(ctx, link, token), 201);
  });

  api.get('/workspaces/:workspaceId/public-links', async (req, res) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    respond(res, SearchLinkList, { data: await listSearchLinks(ctx, workspaceId) });
  });

  api.get('/workspaces/:workspaceId/public-links/:id', async (req, res) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    const link = await getSearchLink(ctx, workspaceId, pathId(req, 'id', 'NOT_FOUND', 'Search link'));
    respond(res, SearchLink, await searchLinkView(ctx, link));
  });

  api.patch('/workspaces/:workspaceId/public-links/:id', async (req, res) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    const linkId = pathId(req, 'id', 'NOT_FOUND', 'Search link');
    const link = await updateSearchLink(ctx, cc(req), workspaceId, linkId, () => decode(PatchBody, req.body ?? {}));
    respond(res, SearchLink, await searchLinkView(ctx, link));
  });

  api.delete('/workspaces/:workspaceId/public-links/:id', async (req, res) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    await revokeSearchLink(ctx, cc(req), workspaceId, pathId(req, 'id', 'NOT_FOUND', 'Search link'));
    res.status(204).end();
  });

  api.get('/workspaces/:workspaceId/public-links/:id/usage', async (req, res) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    const link = await getSearchLink(ctx, workspaceId, pathId(req, 'id', 'NOT_FOUND', 'Search link'));
    const q = decode(UsageQuery, req.query);
    respond(res, LinkUsage, await linkUsageReport(ctx, link, q.hours ?? 24));
  });

  api.get('/workspaces/:workspaceId/public-links/:id/queries', async (req, res) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    const link = await getSearchLink(ctx, workspaceId, pathId(req, 'id', 'NOT_FOUND', 'Search link'));
    const q = decode(QueriesQuery, req.query);
    const page = await storedQueryPage(ctx, link.id, { before: q.before ? new Date(q.before).toISOString() : undefined, limit: q.limit ?? 50 });
    respond(res, LinkQueryPage, { ...page, historyMode: link.historyMode });
  });

  return { api, docs: searchLinkDocs };
}
