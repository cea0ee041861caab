import { CommandContext } from '../../src/core/commandHandler';
import { getSearchLink } from '../../queries/searchLink/searchLinkQueries';
import { runSearchLinkCommand, SearchLinkDeps } from './runSearchLinkCommand';

/** Revoke a link: its token and id open nothing from now on. */
export async function revokeSearchLink(deps: SearchLinkDeps, cc: CommandContext, workspaceId: string, linkId: string): Promise<void> {
  await getSearchLink(deps, workspaceId, linkId);
  await runSearchLinkCommand(deps, cc, linkId, workspaceId, { type: 'RevokeSearchLink', workspaceId, now: cc.now });
}
