import { randomBytes, randomUUID } from 'node:crypto';
import { CommandContext } from '../../src/core/commandHandler';
import { DomainError } from '../../src/domain/errors';
import { ToolProfile } from '../../src/domain/searchLink/events';
import { sha256Hex } from '../../src/util/crypto';
import { tokenVault } from '../../src/security/tokenVault';
import { workspaceLinkFacts } from '../../queries/workspace/workspaceQueries';
import { getSearchLink, SearchLinkView } from '../../queries/searchLink/searchLinkQueries';
import { runSearchLinkCommand, SearchLinkDeps } from './runSearchLinkCommand';

export interface SearchLinkInput {
  name?: string | null;
  allowedTags?: string[] | null;
  expiresAt?: string | null;
  historyMode?: boolean;
  toolProfile?: ToolProfile;
}

/**
 * A new public search link with a fresh token: only its hash (to look it up) and its sealed
 * form (to show it again to admins) are stored. `input` is decoded only once the workspace
 * is known to allow links, so a disabled workspace answers PUBLIC_LINKS_DISABLED whatever the body.
 * Returns the link and its token (shown once in clear).
 */
export async function createSearchLink(deps: SearchLinkDeps, cc: CommandContext, workspaceId: string, input: () => SearchLinkInput): Promise<{ link: SearchLinkView; token: string }> {
  const facts = await workspaceLinkFacts(deps, workspaceId);
  if (!facts.linksEnabled) throw new DomainError('PUBLIC_LINKS_DISABLED', 'Public search links are disabled for this workspace.');
  const body = input();
  const linkId = randomUUID();
  const token = randomBytes(32).toString('hex');
  await runSearchLinkCommand(deps, cc, linkId, workspaceId, {
    type: 'CreateSearchLink',
    linkId,
    workspaceId,
    tokenHash: sha256Hex(token),
    tokenPrefix: token.slice(0, 8),
    tokenCiphertext: tokenVault(deps).seal(token, linkId),
    name: (body.name ?? '').trim(),
    allowedTags: body.allowedTags ?? [],
    expiresAt: body.expiresAt ?? null,
    historyMode: body.historyMode ?? false,
    toolProfile: body.toolProfile ?? 'default',
    ...facts,
    now: cc.now,
  });
  return { link: await getSearchLink(deps, workspaceId, linkId), token };
}
