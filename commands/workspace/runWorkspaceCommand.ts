import { AppContext } from '../../src/app/context';
import { CommandContext } from '../../src/core/commandHandler';
import { WorkspaceCommand, workspaceDecider } from '../../src/domain/workspace/decider';
import { workspaceStream } from '../../src/domain/workspace/events';
import { CommandPorts, executeCommand } from '../../src/core/executeCommand';
import { isUuid } from '../../src/domain/ids';

/** What the workspace use cases need: the log, the read models (reads and read-your-writes). */
export type WorkspaceDeps = CommandPorts & Pick<AppContext, 'readStore'>;

/** One command on a workspace's stream (members, invitations and tags live there too). */
export const runWorkspaceCommand = (deps: CommandPorts, cc: CommandContext, workspaceId: string, command: WorkspaceCommand) =>
  executeCommand(deps, workspaceStream(workspaceId), workspaceDecider, command, { ...cc, workspaceId }, { workspaceId });

/** The acting user (workspace commands are never run by the system). */
export function actorOf(cc: CommandContext): string {
  if (!cc.actorId) throw new Error('a workspace command needs an acting user');
  return cc.actorId;
}

/** Every id the service issues is a UUID; anything else names nothing. */
export const isId = (s: string): boolean => isUuid(s);
