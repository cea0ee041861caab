import { CommandContext } from '../../src/core/commandHandler';
import { workspaceLinkFacts } from '../../queries/workspace/workspaceQueries';
import { getSearchLink, SearchLinkView } from '../../queries/searchLink/searchLinkQueries';
import { SearchLinkInput } from './createSearchLink';
import { runSearchLinkCommand, SearchLinkDeps } from './runSearchLinkCommand';

/**
 * Change a link's name, scope, expiry, history mode or tool profile (fields left out stay). An unknown link
 * is NOT_FOUND before `input` is decoded. Returns the link as changed.
 */
export async function updateSearchLink(deps: SearchLinkDeps, cc: CommandContext, workspaceId: string, linkId: string, input: () => SearchLinkInput): Promise<SearchLinkView> {
  await getSearchLink(deps, workspaceId, linkId);
  const body = input();
  const facts = await workspaceLinkFacts(deps, workspaceId);
  await runSearchLinkCommand(deps, cc, linkId, workspaceId, {
    type: 'UpdateSearchLink',
    workspaceId,
    ...(body.name !== undefined ? { name: (body.name ?? '').trim() } : {}),
    ...(body.allowedTags !== undefined ? { allowedTags: body.allowedTags ?? [] } : {}),
    ...(body.expiresAt !== undefined ? { expiresAt: body.expiresAt } : {}),
    ...(body.historyMode !== undefined ? { historyMode: body.historyMode } : {}),
    ...(body.toolProfile !== undefined ? { toolProfile: body.toolProfile } : {}),
    ...facts,
    now: cc.now,
  });
  return getSearchLink(deps, workspaceId, linkId);
}
