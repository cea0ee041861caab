import { CommandContext } from '../../src/core/commandHandler';
import { Purpose } from '../../src/domain/document/events';
import { getWorkspace } from '../../queries/workspace/workspaceQueries';
import { actorOf, runWorkspaceCommand, WorkspaceDeps } from './runWorkspaceCommand';

export interface UpdateWorkspaceInput {
  name?: string;
  settings?: { allowPublicSearchLinks?: boolean; defaultDocumentPurpose?: Purpose };
}

/** Rename a workspace or change its settings; returns the workspace as its caller now sees it. */
export async function updateWorkspace(deps: WorkspaceDeps, cc: CommandContext, workspaceId: string, input: UpdateWorkspaceInput) {
  const actorId = actorOf(cc);
  await runWorkspaceCommand(deps, cc, workspaceId, { type: 'UpdateWorkspace', actorId, name: input.name?.trim(), settings: input.settings, now: cc.now });
  return getWorkspace(deps, workspaceId, actorId);
}
