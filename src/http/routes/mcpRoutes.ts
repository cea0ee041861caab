import { RouteDocs } from '../openapi/routeDocs';
import express, { Request, Response } from 'express';
import { AppContext } from '../../app/context';
import { searchLinkByToken, scopeTags, SearchLinkView } from '../../../queries/searchLink/searchLinkQueries';
import { recordLinkUse } from '../../../queries/searchLink/linkUsage';
import { recordLinkUsed, recordSearch } from '../../../commands/search/recordSearch';
import { randomUUID } from 'node:crypto';
import { cutToScope, fetchThroughLink, searchThroughLink } from '../../../queries/searchLink/searchThroughLink';
import { CHATGPT_SEARCH_RESULTS } from '../../mcp/chatgptTools';
import { LIMIT_MAX } from '../../mcp/searchTool';
import { DomainError } from '../../domain/errors';
import { ACCEPTED_PROTOCOL_VERSIONS, classify, errorMessage, idOf, Incoming, parseJson, resultMessage, RPC, RpcError, RpcId } from '../../mcp/protocol';
import { dispatch, McpLinkSession } from '../../mcp/server';
import { consumeRateLimit, guessingGuard } from '../rateLimit';
import { clientErrorStatus, HttpError } from '../errors';
import { RouteModule, router } from './module';
import { RpcResult } from '../responses';
import { clientGone } from '../clientGone';
import { SEARCH_BUSY_RETRY_AFTER_S, SearchAbandoned } from '../../search/searchTurns';

export const MCP_BODY_LIMIT = 1024 * 1024;

/** The API description of these routes. */
export const mcpDocs: RouteDocs = {
  'POST /mcp/:token': {
    summary: 'The tool endpoint of a public link (MCP, Streamable HTTP, stateless JSON-RPC)',
    description: 'One JSON-RPC message per POST (initialize, ping, tools/list, tools/call). Tools by the link\'s toolProfile: `default` → service_search; `chatgpt` → search and fetch. OPTIONS answers the allowed methods. A notification is answered 202 with no body; a request, 200 with its JSON-RPC result (a failure: the JSON-RPC error, with the HTTP status of its kind).',
    response: RpcResult,
  },
};
const ALLOW = 'POST, OPTIONS';
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

function send(res: Response, status: number, body: unknown): void {
  res.status(status).type('application/json').send(JSON.stringify(body));
}

function sendRpcError(res: Response, id: RpcId, err: RpcError): void {
  send(res, err.httpStatus, errorMessage(id, err));
}

const rawBody = express.raw({ type: () => true, limit: MCP_BODY_LIMIT });

/** A body that could not be read, as the JSON-RPC error it answers (never a 500). */
function unreadableBody(err: unknown): unknown {
  const status = clientErrorStatus(err);
  if (status === undefined) return err;
  if (status === 413) return new RpcError(RPC.INVALID_REQUEST, `Invalid request: the body exceeds ${MCP_BODY_LIMIT} bytes.`, undefined, 413);
  if (status === 415) return new RpcError(RPC.INVALID_REQUEST, 'Invalid request: unsupported Content-Encoding; send identity, gzip, deflate or br.', undefined, 415);
  return new RpcError(RPC.PARSE_ERROR, 'Parse error: the body could not be read (is its Content-Encoding right?).');
}

/**
 * Read the raw body ourselves (the app skips JSON parsing on /mcp/) so bad JSON is a -32700.
 * The same reader as every other route: bounded, and Content-Encoding (gzip, deflate, br) honoured.
 */
function readBody(req: Request, res: Response): Promise<string> {
  return new Promise((resolve, reject) => {
    rawBody(req, res, (err?: unknown) => {
      if (err) {
        reject(unreadableBody(err));
        return;
      }
      const body: unknown = req.body;
      resolve(Buffer.isBuffer(body) ? body.toString('utf8') : '');
    });
  });
}

/**
 * DNS-rebinding protection: a browser page on another origin must not reach the tool
 * endpoint. An Origin, when sent, must be the service's own (KB_BASE_URL); a loopback
 * service also accepts its loopback names on the port it actually listens on, and then
 * requires a loopback Host too.
 */
function originAllowed(ctx: AppContext, req: Request): boolean {
  const base = new URL(ctx.config.baseUrl);
  const loopback = LOOPBACK.has(base.hostname);
  const port = req.socket.localPort;
  const loopbackHosts = loopback ? [...LOOPBACK].map((h) => `${h}:${port}`) : [];
  const host = req.headers.host?.toLowerCase();
  if (loopback && host !== undefined && host !== base.host && !loopbackHosts.includes(host)) return false;
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  if (origin === base.origin) return true;
  return loopback && loopbackHosts.some((h) => origin.toLowerCase() === `http://${h}` || origin.toLowerCase() === `https://${h}`);
}

async function limit(ctx: AppContext, res: Response, limiter: ReturnType<AppContext['rateLimiter']>, perMinute: number, key: string): Promise<void> {
  return asRpc(res, consumeRateLimit(ctx, limiter, perMinute, key, res, 'mcp'));
}

/** A 429 of the HTTP rate limiters as the JSON-RPC rate-limit error (-32000, data.retryAfter). */
async function asRpc(res: Response, limited: Promise<void>): Promise<void> {
  try {
    await limited;
  } catch (err) {
    if (err instanceof HttpError && err.status === 429) {
      for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
      const retryAfter = Number(err.headers['Retry-After'] ?? 60);
      throw new RpcError(RPC.RATE_LIMITED, `Rate limit exceeded; retry after ${retryAfter} s.`, { retryAfter });
    }
    throw err;
  }
}

/** The refusal of a token that opens no link (any more). */
function refusal(status: 'not_found' | 'expired'): RpcError {
  return new RpcError(RPC.FORBIDDEN, status === 'expired' ? 'Forbidden: this search link has expired.' : 'Forbidden: the token is invalid or the link is no longer active.');
}

function linkSession(ctx: AppContext, token: string, link: SearchLinkView, signal: AbortSignal, onSearch: (hitDocumentIds: string[]) => void): McpLinkSession {
  const documentUrl = (id: string) => `${ctx.config.baseUrl}/v1/documents/${id}`;
  let tags: Promise<{ id: string; name: string }[]> | undefined;
  const scope = () => (tags ??= scopeTags(ctx, link));
  /**
   * The link as it is now. A search waits for its turn: a link revoked, expired or disabled
   * meanwhile (its revocation already answered) answers nothing, and one narrowed meanwhile
   * answers only what its scope holds now.
   */
  const current = async (): Promise<SearchLinkView> => {
    const now = await searchLinkByToken(ctx, token);
    if (now.status !== 'ok') throw refusal(now.status);
    return now.link;
  };
  return {
    scoped: link.allowedTags.length > 0,
    scopeTags: scope,
    // Arguments were validated against scopeTags, so a requested tag is inside the scope.
    search: async (args) => {
      const found = await searchThroughLink(ctx, link, { ...args, signal });
      const hits = cutToScope(found, await current());
      onSearch(hits.map((h) => h.documentId));
      return hits.map((h) => ({ title: h.title, content: h.content, score: h.score }));
    },
    profile: link.toolProfile ?? 'default',
    // The chatgpt profile: documents (not passages), each once, best first; the citation URL is
    // the document's own API address (members only), never the link's token.
    searchDocuments: async (query) => {
      const hits = cutToScope(await searchThroughLink(ctx, link, { query, limit: LIMIT_MAX, signal }), await current());
      onSearch(hits.map((h) => h.documentId));
      const seen = new Set<string>();
      const out = [];
      for (const h of hits) {
        if (seen.has(h.documentId)) continue;
        seen.add(h.documentId);
        out.push({ id: h.documentId, title: h.title, url: documentUrl(h.documentId) });
        if (out.length === CHATGPT_SEARCH_RESULTS) break;
      }
      return out;
    },
    fetchDocument: async (id) => {
      try {
        const d = await fetchThroughLink(ctx, link, id, ctx.config.mcpFetchMaxChars);
        const now = await current();
        if (now.allowedTags.length > 0 && !d.tags.some((t) => now.allowedTags.includes(t))) return null;
        return { id: d.documentId, title: d.title, text: d.text, url: documentUrl(d.documentId), metadata: { mimeType: d.mimeType, updatedAt: d.updatedAt, truncated: d.truncated, tags: d.tags } };
      } catch (err) {
        if (err instanceof DomainError && err.code === 'DOCUMENT_NOT_FOUND') return null;
        throw err;
      }
    },
  };
}

export function mcpRoutes(ctx: AppContext): RouteModule {
  const root = router();
  const perIp = ctx.rateLimiter({ keyPrefix: 'mcp-ip', points: 100, durationSeconds: 60 });
  const perLink = ctx.rateLimiter({ keyPrefix: 'mcp-link', points: 30, durationSeconds: 60 });
  const guard = guessingGuard(ctx);

  root.all('/mcp/:token', async (req, res) => {
    const started = process.hrtime.bigint();
    let id: RpcId = null;
    let link: SearchLinkView | undefined;
    let query: string | undefined;
    let ok = false;
    try {
      if (!originAllowed(ctx, req)) throw new RpcError(RPC.FORBIDDEN, 'Forbidden: requests from this origin are not allowed.', undefined, 403);
      if (req.method === 'OPTIONS') {
        res.setHeader('Allow', ALLOW);
        res.status(204).end();
        return;
      }
      if (req.method !== 'POST') {
        res.setHeader('Allow', ALLOW);
        throw new RpcError(RPC.INVALID_REQUEST, `Method not allowed: ${req.method}; this stateless endpoint answers POST (one JSON-RPC message) and OPTIONS.`, undefined, 405);
      }
      // The per-IP point is taken before the body is read, but a refusal is answered once the
      // body parsed, so the 429 echoes the request's id (id null only when the body is not JSON).
      const ipRefusal = await limit(ctx, res, perIp, 100, req.ip ?? 'unknown').then(
        () => undefined,
        (err: unknown) => {
          if (err instanceof RpcError) return err;
          throw err;
        },
      );
      let raw: unknown;
      try {
        raw = parseJson(await readBody(req, res));
      } catch (err) {
        throw ipRefusal ?? err;
      }
      id = idOf(raw);
      if (ipRefusal) throw ipRefusal;
      const version = req.headers['mcp-protocol-version'];
      if (version !== undefined && !ACCEPTED_PROTOCOL_VERSIONS.includes(String(version))) {
        throw new RpcError(RPC.INVALID_REQUEST, `Invalid request: unsupported MCP-Protocol-Version; supported: ${ACCEPTED_PROTOCOL_VERSIONS.join(', ')}.`);
      }
      const msg: Incoming = classify(raw);
      await asRpc(res, guard.before(req));
      const resolved = await searchLinkByToken(ctx, String(req.params.token));
      if (resolved.status === 'not_found') await asRpc(res, guard.failed(req, res));
      if (resolved.status !== 'ok') throw refusal(resolved.status);
      link = resolved.link;
      await limit(ctx, res, perLink, 30, link.id);
      if (msg.kind !== 'request') {
        ok = true;
        res.status(202).end();
        return;
      }
      if (msg.method === 'tools/call' && typeof msg.params.arguments === 'object' && msg.params.arguments !== null) {
        const q = (msg.params.arguments as Record<string, unknown>).query;
        if (typeof q === 'string') query = q.trim();
      }
      const searched = link;
      const result = await dispatch(
        msg,
        linkSession(ctx, String(req.params.token), link, clientGone(res), (hitDocumentIds) =>
          recordSearch(ctx, {
            workspaceId: searched.workspaceId,
            channel: 'tool',
            linkId: searched.id,
            actorId: null,
            authMethod: 'public_token',
            correlationId: req.correlationId ?? randomUUID(),
            latencyMs: Number(process.hrtime.bigint() - started) / 1e6,
            hitDocumentIds,
          }),
        ),
      );
      ok = true;
      send(res, 200, resultMessage(msg.id, result));
    } catch (err) {
      if (err instanceof RpcError) {
        sendRpcError(res, id, err);
        return;
      }
      // Its client left while the search waited for its turn: nobody is left to read an answer.
      if (err instanceof SearchAbandoned) {
        res.destroy();
        return;
      }
      // The workspace's searches are at their bound (or the index is): a refusal to retry, not our failure.
      if (err instanceof DomainError && err.code === 'SERVICE_UNAVAILABLE') {
        res.setHeader('Retry-After', String(SEARCH_BUSY_RETRY_AFTER_S));
        sendRpcError(res, id, new RpcError(RPC.RATE_LIMITED, `Server busy: ${err.message}`, { retryAfter: SEARCH_BUSY_RETRY_AFTER_S }, 503));
        return;
      }
      // Never the message of an unexpected error: it might carry query text.
      ctx.logger.error({ errName: err instanceof Error ? err.name : 'unknown', reqId: req.correlationId }, 'tool endpoint internal error');
      sendRpcError(res, id, new RpcError(RPC.INTERNAL_ERROR, 'Internal error.'));
    } finally {
      if (link) {
        const latencyMs = Number(process.hrtime.bigint() - started) / 1e6;
        recordLinkUsed(ctx, { workspaceId: link.workspaceId, linkId: link.id, channel: 'mcp', ok, latencyMs, correlationId: req.correlationId ?? randomUUID() });
        void recordLinkUse(ctx, link, {
          channel: 'mcp',
          latencyMs,
          ok,
          ip: req.ip,
          userAgent: req.headers['user-agent'],
          ...(ok && query !== undefined ? { query } : {}),
        });
      }
    }
  });

  return { root, docs: mcpDocs };
}
