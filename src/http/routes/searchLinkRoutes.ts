import { Request } from 'express';
import * as t from 'io-ts';
import { randomBytes, randomUUID } from 'node:crypto';
import { AppContext } from '../../app/context';
import { DomainError, ErrorCode } from '../../domain/errors';
import { searchLinkDecider, SearchLinkCommand } from '../../domain/searchLink/decider';
import { searchLinkStream } from '../../domain/searchLink/events';
import { sha256Hex } from '../../util/crypto';
import { tokenVault } from '../../security/tokenVault';
import { tagsCollection, workspacesCollection } from '../../../projections/workspace/workspaceProjection';
import { getSearchLink, listSearchLinks, searchLinkView } from '../../../queries/searchLink/searchLinkQueries';
import { linkUsageReport } from '../../../queries/searchLink/linkUsage';
import { requireAuth, requireWorkspaceRole } from '../auth';
import { decode, HumanName, IntFromString, IsoDateString, strict } from '../codecs';
import { execute } from '../exec';
import { RouteModule, router } from './module';
import { Uuid } from '../ids';

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** historyMode as a boolean, or the spec's words ON / OFF. */
const HistoryMode = new t.Type<boolean, boolean, unknown>(
  'HistoryMode(boolean|ON|OFF)',
  (u): u is boolean => typeof u === 'boolean',
  (u, c) => (typeof u === 'boolean' ? t.success(u) : u === 'ON' ? t.success(true) : u === 'OFF' ? t.success(false) : t.failure(u, c, 'must be true/false or ON/OFF')),
  (b) => b,
);
const Tags = t.array(Uuid);
const Fields = {
  name: t.union([t.null, HumanName(200, 0)]),
  allowedTags: t.union([t.null, Tags]),
  expiresAt: t.union([t.null, IsoDateString]),
  historyMode: HistoryMode,
};
const CreateBody = strict(t.partial(Fields));
const PatchBody = strict(t.partial(Fields));

/** The JSON body codecs of these routes (property tests walk them). */
export const searchLinkBodies = { CreateBody, PatchBody };
const UsageQuery = t.partial({ hours: t.refinement(IntFromString, (n) => n >= 1 && n <= 24 * 90, 'hours 1..2160') });

function pathId(req: Request, name: string, code: ErrorCode, what: string): string {
  const id = String(req.params[name]);
  if (!ID.test(id)) throw new DomainError(code, `${what} not found.`);
  return id.toLowerCase();
}

/** What the decider needs from outside its stream: the workspace switch and its tag ids. */
async function workspaceFacts(ctx: AppContext, workspaceId: string) {
  const ws = await workspacesCollection(ctx.readStore).get(workspaceId);
  if (!ws) throw new DomainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
  const tags = await tagsCollection(ctx.readStore).find({ workspaceId });
  return { linksEnabled: ws.settings.allowPublicSearchLinks, workspaceTags: tags.map((x) => x.tagId) };
}

export function searchLinkRoutes(ctx: AppContext): RouteModule {
  // Load (or create) the token key now: a malformed KB_LINK_TOKEN_KEY stops start-up, not a request.
  const vault = tokenVault(ctx);
  const api = router();
  api.use('/workspaces/:workspaceId/public-links', requireAuth(ctx), async (req, _res, next) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    await requireWorkspaceRole(ctx, req, workspaceId, 'ADMIN');
    next();
  });

  const run = (req: Request, linkId: string, workspaceId: string, command: SearchLinkCommand) =>
    execute(ctx, req, searchLinkStream(linkId), searchLinkDecider, command, { workspaceId });

  api.post('/workspaces/:workspaceId/public-links', async (req, res) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    const facts = await workspaceFacts(ctx, workspaceId);
    if (!facts.linksEnabled) throw new DomainError('PUBLIC_LINKS_DISABLED', 'Public search links are disabled for this workspace.');
    const body = decode(CreateBody, req.body ?? {});
    const linkId = randomUUID();
    const token = randomBytes(32).toString('hex');
    await run(req, linkId, workspaceId, {
      type: 'CreateSearchLink',
      linkId,
      workspaceId,
      tokenHash: sha256Hex(token),
      tokenPrefix: token.slice(0, 8),
      tokenCiphertext: vault.seal(token, linkId),
      name: (body.name ?? '').trim(),
      allowedTags: body.allowedTags ?? [],
      expiresAt: body.expiresAt ?? null,
      historyMode: body.historyMode ?? false,
      ...facts,
      now: ctx.now(),
    });
    const link = await getSearchLink(ctx, workspaceId, linkId);
    res.status(201).json(await searchLinkView(ctx, link, token));
  });

  api.get('/workspaces/:workspaceId/public-links', async (req, res) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    res.json({ data: await listSearchLinks(ctx, workspaceId) });
  });

  api.get('/workspaces/:workspaceId/public-links/:id', async (req, res) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    const link = await getSearchLink(ctx, workspaceId, pathId(req, 'id', 'NOT_FOUND', 'Search link'));
    res.json(await searchLinkView(ctx, link));
  });

  api.patch('/workspaces/:workspaceId/public-links/:id', async (req, res) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    const linkId = pathId(req, 'id', 'NOT_FOUND', 'Search link');
    await getSearchLink(ctx, workspaceId, linkId);
    const body = decode(PatchBody, req.body ?? {});
    const facts = await workspaceFacts(ctx, workspaceId);
    await run(req, linkId, workspaceId, {
      type: 'UpdateSearchLink',
      workspaceId,
      ...(body.name !== undefined ? { name: (body.name ?? '').trim() } : {}),
      ...(body.allowedTags !== undefined ? { allowedTags: body.allowedTags ?? [] } : {}),
      ...(body.expiresAt !== undefined ? { expiresAt: body.expiresAt } : {}),
      ...(body.historyMode !== undefined ? { historyMode: body.historyMode } : {}),
      ...facts,
      now: ctx.now(),
    });
    res.json(await searchLinkView(ctx, await getSearchLink(ctx, workspaceId, linkId)));
  });

  api.delete('/workspaces/:workspaceId/public-links/:id', async (req, res) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    const linkId = pathId(req, 'id', 'NOT_FOUND', 'Search link');
    await getSearchLink(ctx, workspaceId, linkId);
    await run(req, linkId, workspaceId, { type: 'RevokeSearchLink', workspaceId, now: ctx.now() });
    res.status(204).end();
  });

  api.get('/workspaces/:workspaceId/public-links/:id/usage', async (req, res) => {
    const workspaceId = pathId(req, 'workspaceId', 'WORKSPACE_NOT_FOUND', 'Workspace');
    const link = await getSearchLink(ctx, workspaceId, pathId(req, 'id', 'NOT_FOUND', 'Search link'));
    const q = decode(UsageQuery, req.query);
    res.json(await linkUsageReport(ctx, link, q.hours ?? 24));
  });

  return { api };
}
