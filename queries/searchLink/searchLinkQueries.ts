import { AppContext } from '../../src/app/context';
import { DomainError } from '../../src/domain/errors';
import { sha256Hex } from '../../src/util/crypto';
import { tokenVault } from '../../src/security/tokenVault';
import { searchLinksCollection, SearchLinkView } from '../../projections/searchLink/searchLinkProjection';
import { tagsCollection, workspacesCollection } from '../../projections/workspace/workspaceProjection';
import { countDocumentsInScope } from '../search/searchService';

export type { SearchLinkView };

export const TOKEN_PATTERN = /^[0-9a-f]{64}$/;

export const publicUrlOf = (ctx: AppContext, token: string): string => `${ctx.config.baseUrl}/public/${token}/search`;

export const isExpired = (link: Pick<SearchLinkView, 'expiresAt'>, now: Date): boolean => link.expiresAt !== null && Date.parse(link.expiresAt) <= now.getTime();

/**
 * The token of a stored link, decrypted from its ciphertext; null for links created before
 * tokens were sealed, or when the key changed (the plain token must then hash to tokenHash).
 */
export function revealToken(ctx: AppContext, link: Pick<SearchLinkView, 'id' | 'tokenHash' | 'tokenCiphertext'>): string | null {
  if (!link.tokenCiphertext) return null;
  const token = tokenVault(ctx).open(link.tokenCiphertext, link.id);
  return token !== null && sha256Hex(token) === link.tokenHash ? token : null;
}

/**
 * The management view of a link (ADMIN only): its token and public URL when the sealed token
 * can be opened, else (older links) only the token prefix and `publicUrl: null`.
 */
export async function searchLinkView(ctx: AppContext, link: SearchLinkView, known?: string) {
  const token = known ?? revealToken(ctx, link);
  return {
    id: link.id,
    ...(token ? { token } : {}),
    tokenPrefix: link.tokenPrefix,
    name: link.name,
    allowedTags: link.allowedTags,
    expiresAt: link.expiresAt,
    historyMode: link.historyMode,
    // Shown when not `default` (absent: the default service_search tool).
    ...(link.toolProfile !== undefined && link.toolProfile !== 'default' ? { toolProfile: link.toolProfile } : {}),
    isActive: !link.revoked && !isExpired(link, ctx.now()),
    isExpired: isExpired(link, ctx.now()),
    createdAt: link.createdAt,
    updatedAt: link.updatedAt,
    publicUrl: token ? publicUrlOf(ctx, token) : null,
    documentCount: await countDocumentsInScope(ctx, link.workspaceId, link.allowedTags),
  };
}

export async function listSearchLinks(ctx: AppContext, workspaceId: string) {
  const links = await searchLinksCollection(ctx.readStore).find({ workspaceId }, { sort: [{ field: 'createdAt', direction: 'asc' }] });
  return Promise.all(links.map((l) => searchLinkView(ctx, l)));
}

export async function getSearchLink(ctx: Pick<AppContext, 'readStore'>, workspaceId: string, linkId: string): Promise<SearchLinkView> {
  const link = await searchLinksCollection(ctx.readStore).get(linkId);
  if (!link || link.workspaceId !== workspaceId) throw new DomainError('NOT_FOUND', 'Search link not found.');
  return link;
}

export type LinkResolution = { status: 'ok'; link: SearchLinkView } | { status: 'not_found' } | { status: 'expired'; link: SearchLinkView };

async function check(ctx: AppContext, link: SearchLinkView | null): Promise<LinkResolution> {
  // A revocation this process appended counts at once, though the read model may still show the link live.
  if (!link || link.revoked || ctx.revocations?.isRevoked('link', link.id) || ctx.revocations?.isRevoked('workspace', link.workspaceId)) return { status: 'not_found' };
  const ws = await workspacesCollection(ctx.readStore).get(link.workspaceId);
  // A workspace that turned public links off answers as if its links did not exist.
  if (!ws || !ws.settings.allowPublicSearchLinks) return { status: 'not_found' };
  if (isExpired(link, ctx.now())) return { status: 'expired', link };
  return { status: 'ok', link };
}

/** The link a public token opens: looked up by the token's SHA-256, never by the token. */
export async function searchLinkByToken(ctx: AppContext, token: string): Promise<LinkResolution> {
  if (!TOKEN_PATTERN.test(token)) return { status: 'not_found' };
  const link = (await searchLinksCollection(ctx.readStore).find({ tokenHash: sha256Hex(token) }, { limit: 1 }))[0] ?? null;
  return check(ctx, link);
}

export async function searchLinkById(ctx: AppContext, linkId: string): Promise<LinkResolution> {
  if (!/^[0-9a-f-]{36}$/i.test(linkId)) return { status: 'not_found' };
  return check(ctx, await searchLinksCollection(ctx.readStore).get(linkId.toLowerCase()));
}

/** Tags of the link's scope with their names (for the tool description and tag-name arguments). */
export async function scopeTags(ctx: AppContext, link: SearchLinkView): Promise<{ id: string; name: string }[]> {
  const all = await tagsCollection(ctx.readStore).find({ workspaceId: link.workspaceId }, { sort: [{ field: 'name', direction: 'asc' }] });
  const tags = all.map((t) => ({ id: t.tagId, name: t.name }));
  if (link.allowedTags.length === 0) return tags;
  const allowed = new Set(link.allowedTags);
  return tags.filter((t) => allowed.has(t.id));
}
