import { randomUUID } from 'node:crypto';
import { CommandContext } from '../../src/core/commandHandler';
import { CommandPorts } from '../../src/core/executeCommand';
import { actorOf, runWorkspaceCommand } from './runWorkspaceCommand';

/** A new workspace, its creator its OWNER. */
export async function createWorkspace(deps: CommandPorts, cc: CommandContext, input: { name: string }) {
  const workspaceId = randomUUID();
  const r = await runWorkspaceCommand(deps, cc, workspaceId, { type: 'CreateWorkspace', workspaceId, actorId: actorOf(cc), name: input.name.trim(), now: cc.now });
  const e = r.events[0];
  if (e.type !== 'WorkspaceCreated') throw new Error('unexpected event');
  return { id: workspaceId, name: e.data.name, createdAt: e.data.createdAt };
}
