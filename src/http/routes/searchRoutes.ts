import { RouteDocs } from '../openapi/routeDocs';
import { Request } from 'express';
import * as t from 'io-ts';
import { AppContext } from '../../app/context';
import { DomainError } from '../../domain/errors';
import { searchWorkspace } from '../../../queries/search/searchService';
import { recheckWorkspaceRole, requireAuth, requireWorkspaceRole } from '../auth';
import { codePointLength, decode, Purpose, strict, textProblem } from '../codecs';
import { byUser, rateLimit } from '../rateLimit';
import { RouteModule, router } from './module';
import { UuidList } from '../ids';
import { UUID_PATTERN } from '../../domain/ids';
import { recordSearch } from '../../../commands/search/recordSearch';
import { commandContext } from '../exec';
import { respond, SearchAnswer } from '../responses';
import { clientGone } from '../clientGone';

export const WORKSPACE_SEARCH_MAX_QUERY = 1000;
export const WORKSPACE_SEARCH_MAX_LIMIT = 20;

const Limit = t.refinement(t.number, (n) => Number.isInteger(n) && n >= 1 && n <= WORKSPACE_SEARCH_MAX_LIMIT, 'integer 1..20');
const Ids = UuidList(1000);
const Body = strict(
  t.partial({
    query: t.unknown,
    limit: Limit,
    filters: t.union([t.null, strict(t.partial({ tags: t.union([t.null, Ids]), purpose: t.union([t.null, Purpose]), documentIds: t.union([t.null, Ids]) }))]),
  }),
);

/** The JSON body codecs of these routes (property tests walk them). */
export const searchBodies = { Body };

/** The API description of these routes (schemas from the codecs above). */
export const searchDocs: RouteDocs = {
  'POST /workspaces/:id/search': { summary: "Search a workspace's VERIFIED documents (hybrid: BM25 + vectors)", body: Body, response: SearchAnswer, example: { query: 'how fast are refunds paid', limit: 5 } },
};

const ID = UUID_PATTERN;

function workspaceIdOf(req: Request): string {
  const id = String(req.params.id);
  if (!ID.test(id)) throw new DomainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
  return id.toLowerCase();
}

/** The query of a search request: required, non-blank, at most `max` characters. */
export function requireQuery(value: unknown, max: number): string {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
    throw new DomainError('QUERY_REQUIRED', 'A non-empty query is required.');
  }
  if (typeof value !== 'string') throw new DomainError('VALIDATION_ERROR', 'Invalid request: query: must be a string.', { fields: [{ field: 'query', problem: 'must be a string' }] });
  const problem = textProblem(value, 'text');
  if (problem) throw new DomainError('VALIDATION_ERROR', `Invalid request: query: ${problem}`, { fields: [{ field: 'query', problem }] });
  // Characters are Unicode code points (an emoji is one character, not two UTF-16 units).
  const length = codePointLength(value);
  if (length > max) throw new DomainError('QUERY_TOO_LONG', `The query is ${length} characters long; the maximum is ${max}.`, { maxLength: max, length });
  return value;
}

export function searchRoutes(ctx: AppContext): RouteModule {
  const v1 = router();
  const limiter = rateLimit(ctx, 'workspace-search', 60, byUser);

  v1.post('/workspaces/:id/search', requireAuth(ctx), async (req, res, next) => {
    const workspaceId = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, workspaceId, 'MEMBER');
    limiter(req, res, next);
  });

  v1.post('/workspaces/:id/search', async (req, res) => {
    const started = process.hrtime.bigint();
    const workspaceId = workspaceIdOf(req);
    const body = decode(Body, req.body ?? {});
    const query = requireQuery(body.query, WORKSPACE_SEARCH_MAX_QUERY);
    const f = body.filters ?? {};
    const hits = await searchWorkspace(ctx, {
      workspaceId,
      query,
      limit: body.limit ?? 5,
      ...(f.tags ? { tags: f.tags } : {}),
      ...(f.purpose ? { purpose: f.purpose } : {}),
      ...(f.documentIds ? { documentIds: f.documentIds } : {}),
      signal: clientGone(res),
    });
    // The search waited for its turn: the caller is judged again as they are now.
    await recheckWorkspaceRole(ctx, req, workspaceId, 'MEMBER');
    const latencyMs = Number(process.hrtime.bigint() - started) / 1e6;
    const who = commandContext(ctx, req, workspaceId);
    recordSearch(ctx, { ...who, workspaceId, channel: 'workspace', linkId: null, latencyMs, hitDocumentIds: hits.map((h) => h.documentId) });
    respond(res, SearchAnswer, {
      query,
      results: hits.map((h) => ({
        documentId: h.documentId,
        documentTitle: h.documentTitle,
        content: h.content,
        score: h.score,
        chunkIndex: h.chunkIndex,
        metadata: { ...(h.page !== undefined ? { page: h.page } : {}), ...(h.section !== undefined ? { section: h.section } : {}) },
      })),
      processingTime: Math.round((Number(process.hrtime.bigint() - started) / 1e6) * 100) / 100,
    });
  });

  return { v1, docs: searchDocs };
}
