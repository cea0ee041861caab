import { CommandContext } from '../../src/core/commandHandler';
import { DomainError } from '../../src/domain/errors';
import { Role } from '../../src/domain/workspace/events';
import { listMembers } from '../../queries/workspace/workspaceQueries';
import { userById } from '../../queries/user/userQueries';
import { CommandPorts } from '../../src/core/executeCommand';
import { actorOf, isId, runWorkspaceCommand, WorkspaceDeps } from './runWorkspaceCommand';

const memberOf = async (deps: WorkspaceDeps, workspaceId: string, userId: string) => (await listMembers(deps, workspaceId)).find((m) => m.userId === userId);

/** Add a registered user to a workspace with a role; returns the new member. */
export async function addMember(deps: WorkspaceDeps, cc: CommandContext, workspaceId: string, input: { userId: string; role: Role }) {
  const user = isId(input.userId) ? await userById(deps, input.userId.toLowerCase()) : null;
  if (!user) throw new DomainError('USER_NOT_FOUND', 'No user with this id.');
  await runWorkspaceCommand(deps, cc, workspaceId, { type: 'AddMember', actorId: actorOf(cc), userId: user.id, role: input.role, now: cc.now });
  return memberOf(deps, workspaceId, user.id);
}

/** Change a member's role; returns the member. */
export async function changeMemberRole(deps: WorkspaceDeps, cc: CommandContext, workspaceId: string, input: { userId: string; role: Role }) {
  await runWorkspaceCommand(deps, cc, workspaceId, { type: 'ChangeMemberRole', actorId: actorOf(cc), userId: input.userId, role: input.role });
  return memberOf(deps, workspaceId, input.userId);
}

/**
 * Hand the workspace over (OWNER only): the member becomes OWNER and the caller ADMIN, in one
 * event (OwnershipTransferred), so there is never a moment with no owner or with both
 * changes half-done. Returns the members afterwards.
 */
export async function transferOwnership(deps: WorkspaceDeps, cc: CommandContext, workspaceId: string, userId: string) {
  await runWorkspaceCommand(deps, cc, workspaceId, { type: 'TransferOwnership', actorId: actorOf(cc), userId, now: cc.now });
  return listMembers(deps, workspaceId);
}

/** Remove a member (or leave, when the member is the actor). */
export async function removeMember(deps: CommandPorts, cc: CommandContext, workspaceId: string, userId: string): Promise<void> {
  await runWorkspaceCommand(deps, cc, workspaceId, { type: 'RemoveMember', actorId: actorOf(cc), userId });
}
