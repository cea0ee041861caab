import { CommandContext } from '../../src/core/commandHandler';
import { RunCommandDeps } from '../shared/runCommand';
import { actorOf, runWorkspaceCommand } from './runWorkspaceCommand';

export async function deleteWorkspace(deps: RunCommandDeps, cc: CommandContext, workspaceId: string): Promise<void> {
  await runWorkspaceCommand(deps, cc, workspaceId, { type: 'DeleteWorkspace', actorId: actorOf(cc), now: cc.now });
}
