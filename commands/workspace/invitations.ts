import { randomUUID } from 'node:crypto';
import { CommandContext } from '../../src/core/commandHandler';
import { DomainError } from '../../src/domain/errors';
import { Role } from '../../src/domain/workspace/events';
import { getInvitation } from '../../queries/workspace/workspaceQueries';
import { userByEmail, userById } from '../../queries/user/userQueries';
import { actorOf, isId, runWorkspaceCommand, WorkspaceDeps } from './runWorkspaceCommand';

/** Invite an e-mail address into a workspace (a registered invitee is named in the event). */
export async function inviteMember(deps: WorkspaceDeps, cc: CommandContext, workspaceId: string, input: { email: string; role: Role }) {
  const invitationId = randomUUID();
  const email = input.email.trim().toLowerCase();
  const invitee = await userByEmail(deps, email);
  const r = await runWorkspaceCommand(deps, cc, workspaceId, { type: 'InviteMember', actorId: actorOf(cc), invitationId, email, role: input.role, now: cc.now, inviteeUserId: invitee?.id });
  const e = r.events[0];
  if (e.type !== 'InvitationCreated') throw new Error('unexpected event');
  return { invitationId, email: e.data.email, role: e.data.role, expiresAt: e.data.expiresAt };
}

/** Accept an invitation as the invited user; returns the id of the workspace joined. */
export async function acceptInvitation(deps: WorkspaceDeps, cc: CommandContext, input: { invitationId: string; actorEmail: string }) {
  const inv = isId(input.invitationId) ? await getInvitation(deps, input.invitationId) : null;
  if (!inv) throw new DomainError('INVITATION_NOT_FOUND', 'Invitation not found.');
  const actorId = actorOf(cc);
  // The invitation goes to a mailbox: only an account whose address was confirmed (the mailed link)
  // proves it owns that mailbox. Otherwise whoever registered the invitee's address first could join.
  // Someone else's invitation stays not found (the decider's answer), whatever the caller's address.
  if (inv.email === input.actorEmail.trim().toLowerCase()) {
    const me = await userById(deps, actorId);
    if (me?.emailVerified !== true)
      throw new DomainError('EMAIL_NOT_VERIFIED', 'Confirm your e-mail address first (the mailed link; POST /v1/auth/resend-verification mails it again): an invitation is accepted from a confirmed address only.');
  }
  await runWorkspaceCommand(deps, cc, inv.workspaceId, { type: 'AcceptInvitation', actorId, actorEmail: input.actorEmail, invitationId: input.invitationId, now: cc.now });
  // The workspace joined; what the caller may see of it (its identity settings may ask more of them first) is the route's to answer.
  return { workspaceId: inv.workspaceId };
}

/** Revoke a pending invitation of this workspace (ADMIN); another workspace's id is not found. */
export async function revokeInvitation(deps: WorkspaceDeps, cc: CommandContext, workspaceId: string, invitationId: string): Promise<void> {
  const inv = isId(invitationId) ? await getInvitation(deps, invitationId.toLowerCase()) : null;
  if (!inv || inv.workspaceId !== workspaceId) throw new DomainError('INVITATION_NOT_FOUND', 'Invitation not found.');
  await runWorkspaceCommand(deps, cc, workspaceId, { type: 'RevokeInvitation', actorId: actorOf(cc), invitationId: inv.id, now: cc.now });
}
