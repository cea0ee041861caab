import { RouteDocs } from '../openapi/routeDocs';
import { Request, Response } from 'express';
import * as t from 'io-ts';
import { AppContext } from '../../app/context';
import { DomainError } from '../../domain/errors';
import { LinkResolution, searchLinkById, searchLinkByToken } from '../../../queries/searchLink/searchLinkQueries';
import { recordLinkUse } from '../../../queries/searchLink/linkUsage';
import { recordLinkUsed, recordSearch } from '../../../commands/search/recordSearch';
import { randomUUID } from 'node:crypto';
import { cutToScope, LinkSearch, searchThroughLink } from '../../../queries/searchLink/searchThroughLink';
import { decode, IntFromString, lengthFirstArray, strict } from '../codecs';
import { consumeRateLimit, guessingGuard } from '../rateLimit';
import { requireQuery } from './searchRoutes';
import { RouteModule, router } from './module';
import { PublicSearchAnswer, respond } from '../responses';
import { clientGone } from '../clientGone';

export const PUBLIC_QUERY_MAX = 1000;
export const PUBLIC_LIMIT_MAX = 50;
export const PUBLIC_PER_MINUTE = 30;
export const PUBLIC_MAX_TAGS = 1000;

const limitCodec = (max: number) => t.refinement(IntFromString, (n) => n >= 1 && n <= max, `integer 1..${max}`);
/** Tag ids, as a comma-separated string or an array (at most 1000, as workspace search's filters). */
const TagList = t.union([t.string, lengthFirstArray(t.string, PUBLIC_MAX_TAGS)]);
/**
 * The GET's query: `q`, `limit`, `tags` (comma-separated, as the spec has it) and nothing else. A
 * parameter it does not know (`tags[]=x`, `tag=x`, `tags[0]=x`) is 400 VALIDATION_ERROR naming it,
 * not ignored: a filter silently dropped widened the search to the link's whole scope.
 */
const GetQuery = strict(t.partial({ q: t.unknown, limit: limitCodec(PUBLIC_LIMIT_MAX), tags: t.string }));
const PostBody = strict(t.partial({ query: t.unknown, limit: limitCodec(PUBLIC_LIMIT_MAX), tags: t.union([t.null, TagList]) }));

/** The JSON body codecs of these routes (property tests walk them). */
export const publicSearchBodies = { PostBody };

const ShortQuery = t.partial({ q: t.unknown, limit: limitCodec(PUBLIC_LIMIT_MAX) });

/** The API description of these routes (schemas from the codecs above). */
export const publicSearchDocs: RouteDocs = {
  'GET /public/:token/search': { summary: 'Search through a public link (`q`)', query: GetQuery, response: PublicSearchAnswer },
  'POST /public/:token/search': { summary: 'Search through a public link', body: PostBody, response: PublicSearchAnswer, example: { query: 'refund policy', limit: 5 } },
  'GET /s/:linkId': { summary: 'Search through a public link by its id (`q`; KB_LINK_ID_SEARCH)', query: ShortQuery, response: PublicSearchAnswer },
};

function tagList(v: string | string[] | null | undefined): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  // Tag ids in any case, as every route takes ids (issued in lower case).
  const list = (Array.isArray(v) ? v : v.split(',')).map((s) => s.trim().toLowerCase()).filter(Boolean);
  return list.length ? [...new Set(list)] : undefined;
}

export function publicSearchRoutes(ctx: AppContext): RouteModule {
  const root = router();
  // One budget per link for its public HTTP uses (/public/<token>/search and /s/<linkId>);
  // the tool endpoint has its own.
  const limiter = ctx.rateLimiter({ keyPrefix: 'public-search', points: PUBLIC_PER_MINUTE, durationSeconds: 60 });
  // Unknown tokens and ids cost the client IP, whatever the token (guessing is per IP, not per guess).
  const guard = guessingGuard(ctx);

  async function serve(req: Request, res: Response, resolve: () => Promise<LinkResolution>, channel: 'http' | 's', input: () => LinkSearch) {
    const started = process.hrtime.bigint();
    await guard.before(req);
    const resolved = await resolve();
    if (resolved.status === 'not_found') {
      await guard.failed(req, res);
      throw new DomainError('NOT_FOUND', 'Not found: the address is unknown, revoked, or no longer public.');
    }
    await consumeRateLimit(ctx, limiter, PUBLIC_PER_MINUTE, resolved.link.id, res, 'public-search');
    if (resolved.status === 'expired') throw new DomainError('EXPIRED', 'This search link has expired.');
    const link = resolved.link;
    let ok = false;
    let query: string | undefined;
    try {
      const s = input();
      query = s.query;
      const found = await searchThroughLink(ctx, link, { ...s, signal: clientGone(res) });
      // The search waited for its turn: the link is judged again as it is now, so one revoked,
      // expired or disabled meanwhile (its revocation already answered) answers nothing.
      const now = await resolve();
      if (now.status === 'not_found') throw new DomainError('NOT_FOUND', 'Not found: the address is unknown, revoked, or no longer public.');
      if (now.status === 'expired') throw new DomainError('EXPIRED', 'This search link has expired.');
      const results = cutToScope(found, now.link);
      ok = true;
      recordSearch(ctx, {
        workspaceId: link.workspaceId,
        channel: 'link',
        linkId: link.id,
        actorId: null,
        authMethod: 'public_token',
        correlationId: req.correlationId ?? randomUUID(),
        latencyMs: Number(process.hrtime.bigint() - started) / 1e6,
        hitDocumentIds: results.map((r) => r.documentId),
      });
      respond(res, PublicSearchAnswer, { results, totalResults: results.length });
    } finally {
      const latencyMs = Number(process.hrtime.bigint() - started) / 1e6;
      recordLinkUsed(ctx, { workspaceId: link.workspaceId, linkId: link.id, channel: channel, ok, latencyMs, correlationId: req.correlationId ?? randomUUID() });
      void recordLinkUse(ctx, link, {
        channel,
        latencyMs,
        ok,
        ip: req.ip,
        userAgent: req.headers['user-agent'],
        ...(ok && query !== undefined ? { query } : {}),
      });
    }
  }

  const byToken = (req: Request) => {
    const token = String(req.params.token);
    return () => searchLinkByToken(ctx, token);
  };

  root.get('/public/:token/search', async (req, res) => {
    await serve(req, res, byToken(req), 'http', () => {
      const q = decode(GetQuery, req.query);
      return { query: requireQuery(q.q, PUBLIC_QUERY_MAX), limit: q.limit ?? 10, tags: tagList(q.tags) };
    });
  });

  root.post('/public/:token/search', async (req, res) => {
    await serve(req, res, byToken(req), 'http', () => {
      const b = decode(PostBody, req.body ?? {});
      return { query: requireQuery(b.query, PUBLIC_QUERY_MAX), limit: b.limit ?? 10, tags: tagList(b.tags) };
    });
  });

  // Mounted after the public instruction-set pages, which answer /s/:id for their ids and pass the rest on.
  root.get('/s/:linkId', async (req, res) => {
    const linkId = String(req.params.linkId);
    // KB_LINK_ID_SEARCH=off: the id (stored in clear in the log and read models) opens nothing.
    const resolve = ctx.config.linkIdSearch ? () => searchLinkById(ctx, linkId) : async (): Promise<LinkResolution> => ({ status: 'not_found' });
    await serve(req, res, resolve, 's', () => {
      const q = decode(ShortQuery, req.query);
      return { query: requireQuery(q.q, PUBLIC_QUERY_MAX), limit: q.limit ?? 3 };
    });
  });

  return { root, docs: publicSearchDocs };
}
