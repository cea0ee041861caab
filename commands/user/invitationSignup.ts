import { AppContext } from '../../src/app/context';
import { CommandContext } from '../../src/core/commandHandler';
import { DomainError } from '../../src/domain/errors';
import { identityKeys } from '../../src/security/identityKeys';
import { getInvitation } from '../../queries/workspace/workspaceQueries';
import { userByEmail } from '../../queries/user/userQueries';
import { handleCommand, loadState } from '../../src/core/commandHandler';
import { workspaceDecider } from '../../src/domain/workspace/decider';
import { workspaceStream } from '../../src/domain/workspace/events';
import { registerUser, SessionOrigin, startSession } from './userCommands';

/**
 * The membership of an account created from an invitation. Idempotent: an invitation already
 * accepted (by this account) is success, so the route and the process manager can both run it.
 */
export async function joinByInvitation(ctx: AppContext, cc: CommandContext, invitationId: string, email: string) {
  const inv = await getInvitation(ctx, invitationId);
  if (!inv) return { position: 0 };
  try {
    const r = await handleCommand(ctx.eventStore, workspaceStream(inv.workspaceId), workspaceDecider, { type: 'AcceptInvitation', actorId: cc.actorId as string, actorEmail: email, invitationId, now: cc.now }, { ...cc, workspaceId: inv.workspaceId });
    return { position: r.position };
  } catch (err) {
    if (err instanceof DomainError && (err.code === 'MEMBER_EXISTS' || err.code === 'INVITATION_NOT_FOUND')) return { position: 0 };
    throw err;
  }
}

/**
 * The newcomer's membership, strictly: success only if the membership is recorded (by this call or, first, by
 * the process manager following UserRegistered). The workspace stream's append (with its expected revision)
 * decides between this and a revoke: an invitation revoked since the checks is INVITATION_NOT_FOUND, never
 * a 201 without a membership (before, joinByInvitation's leniency swallowed it and a session was answered).
 */
async function joinAsNewcomer(ctx: AppContext, cc: CommandContext, workspaceId: string, invitationId: string, email: string) {
  try {
    const r = await handleCommand(ctx.eventStore, workspaceStream(workspaceId), workspaceDecider, { type: 'AcceptInvitation', actorId: cc.actorId as string, actorEmail: email, invitationId, now: cc.now }, { ...cc, workspaceId });
    return { position: r.position };
  } catch (err) {
    if (!(err instanceof DomainError) || (err.code !== 'MEMBER_EXISTS' && err.code !== 'INVITATION_NOT_FOUND')) throw err;
    const { state } = await loadState(ctx.eventStore, workspaceStream(workspaceId), workspaceDecider);
    if (state.status === 'active' && state.members.has(cc.actorId as string)) return { position: 0 };
    // The revoke won. The account stays (the mailed link proved the address), without the membership or a session.
    throw new DomainError('INVITATION_NOT_FOUND', 'Invitation not found: it was revoked while you accepted it. Your account was created; sign in with it, and ask for a new invitation.');
  }
}

/**
 * Accept an e-mailed invitation as someone without an account: the account is created with
 * the invited address (already verified: the link proves it) and joins the workspace, and a
 * session starts — one request. The token is `<workspaceId>.<invitationId>.<HMAC>`.
 */
export async function acceptInvitationAsNewcomer(ctx: AppContext, cc: CommandContext, input: { token: string; name: string; password: string }, origin: SessionOrigin) {
  const req = identityKeys(ctx).requestOf('invitation', input.token);
  if (!req) throw new DomainError('INVALID_TOKEN', 'The link is invalid or has already been used.');
  const inv = await getInvitation(ctx, req.requestId);
  if (!inv || inv.workspaceId !== req.subjectId || inv.accepted) throw new DomainError('INVITATION_NOT_FOUND', 'Invitation not found.');
  // The read model may lag a revoke: the workspace's own stream says whether the invitation is still pending
  // (so that a revoke already recorded creates no account; one recorded later is caught by joinAsNewcomer).
  const { state: ws } = await loadState(ctx.eventStore, workspaceStream(inv.workspaceId), workspaceDecider);
  const pending = ws.status === 'active' ? ws.invitations.get(inv.id) : undefined;
  if (!pending || pending.accepted) throw new DomainError('INVITATION_NOT_FOUND', 'Invitation not found.');
  if (Date.parse(inv.expiresAt) <= cc.now.getTime()) throw new DomainError('INVITATION_EXPIRED', 'The invitation has expired; ask for a new one.');
  if (await userByEmail(ctx, inv.email)) {
    throw new DomainError('EMAIL_TAKEN', 'An account with this address exists: sign in and accept with POST /v1/invitations/:id/accept.', { invitationId: inv.id });
  }
  const reg = await registerUser(ctx, cc, { email: inv.email, password: input.password, name: input.name, emailVerified: true, invitation: { workspaceId: inv.workspaceId, invitationId: inv.id } });
  const userId = reg.user.userId;
  await ctx.runner.waitFor(reg.position, ctx.config.readYourWritesMs);
  const joined = await joinAsNewcomer(ctx, { ...cc, actorId: userId }, inv.workspaceId, inv.id, inv.email);
  const session = await startSession(ctx, cc, userId, origin, 'password');
  return { userId, email: inv.email, workspaceId: inv.workspaceId, ...session, position: Math.max(joined.position, session.position) };
}
