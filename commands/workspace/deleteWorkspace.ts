import { CommandContext } from '../../src/core/commandHandler';
import { CommandPorts } from '../../src/core/executeCommand';
import { actorOf, runWorkspaceCommand } from './runWorkspaceCommand';

export async function deleteWorkspace(deps: CommandPorts, cc: CommandContext, workspaceId: string): Promise<void> {
  await runWorkspaceCommand(deps, cc, workspaceId, { type: 'DeleteWorkspace', actorId: actorOf(cc), now: cc.now });
}
