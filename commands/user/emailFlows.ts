import { randomUUID } from 'node:crypto';
import { AppContext } from '../../src/app/context';
import { CommandContext, handleCommand } from '../../src/core/commandHandler';
import { DomainError } from '../../src/domain/errors';
import { userDecider } from '../../src/domain/user/deciders';
import { userStream } from '../../src/domain/user/events';
import { identityKeys } from '../../src/security/identityKeys';
import { hashPassword, sha256Hex } from '../../src/util/crypto';
import { usersCollection } from '../../projections/user/userProjection';
import { revokeAllSessions, revokeApiKeysCreatedBefore } from './sessions';

const invalidToken = () => new DomainError('INVALID_TOKEN', 'The link is invalid or has already been used.');

async function userOf(ctx: AppContext, userId: string) {
  const user = await usersCollection(ctx.readStore).get(userId);
  if (!user) throw new DomainError('USER_NOT_FOUND', 'User not found.');
  return user;
}

/** A new verification mail for the caller (no-op when already verified). */
export async function requestEmailVerification(ctx: AppContext, cc: CommandContext, userId: string) {
  const user = await userOf(ctx, userId);
  const expiresAt = new Date(cc.now.getTime() + ctx.config.identity.verificationTtl * 1000);
  const r = await handleCommand(ctx.eventStore, userStream(sha256Hex(user.email)), userDecider, { type: 'RequestEmailVerification', requestId: randomUUID(), email: user.email, expiresAt }, cc);
  return { sent: r.events.length > 0, alreadyVerified: user.emailVerified === true, position: r.position };
}

/** Verify an address with the token of a verification mail (signed, single use, expiring). */
export async function verifyEmail(ctx: AppContext, cc: CommandContext, token: string) {
  const req = identityKeys(ctx).requestOf('verify-email', token);
  if (!req) throw invalidToken();
  const user = await usersCollection(ctx.readStore).get(req.subjectId);
  if (!user) throw invalidToken();
  const r = await handleCommand(ctx.eventStore, userStream(sha256Hex(user.email)), userDecider, { type: 'VerifyEmail', requestId: req.requestId, now: cc.now }, { ...cc, actorId: user.id });
  return { userId: user.id, position: r.position };
}

/**
 * Ask for a password-reset mail. The answer does not depend on whether the address has an
 * account: the caller answers at once and this runs after (see the route).
 */
export async function requestPasswordReset(ctx: AppContext, cc: CommandContext, email: string) {
  const user = (await usersCollection(ctx.readStore).find({ email }, { limit: 1 }))[0];
  if (!user) return { position: 0 };
  const expiresAt = new Date(cc.now.getTime() + ctx.config.identity.resetTtl * 1000);
  const r = await handleCommand(ctx.eventStore, userStream(sha256Hex(user.email)), userDecider, { type: 'RequestPasswordReset', requestId: randomUUID(), email: user.email, expiresAt }, { ...cc, actorId: null });
  return { position: r.position };
}

/**
 * Set a new password with the token of a reset mail (single use, short-lived; every other
 * outstanding reset link dies with it), then revoke every session of the account. API keys
 * stay valid: they are credentials of servers, managed and revoked on their own; except when
 * the account's address had never been confirmed (the link confirms it now): its keys were
 * made by whoever registered the address, maybe not its owner, and are revoked too.
 */
export async function resetPassword(ctx: AppContext, cc: CommandContext, token: string, password: string) {
  const req = identityKeys(ctx).requestOf('reset-password', token);
  if (!req) throw invalidToken();
  const user = await usersCollection(ctx.readStore).get(req.subjectId);
  if (!user) throw invalidToken();
  const passwordHash = await hashPassword(password);
  const ucc = { ...cc, actorId: user.id };
  const r = await handleCommand(ctx.eventStore, userStream(sha256Hex(user.email)), userDecider, { type: 'ResetPassword', requestId: req.requestId, passwordHash, now: cc.now }, ucc);
  // The mail process manager does it again from the log (a crash right here loses nothing).
  const revoked = await revokeAllSessions(ctx, { ...ucc, authMethod: 'system' }, user.id, 'password_reset');
  const reset = r.events[0];
  // The address was never confirmed before: its API keys were made without proof of owning it.
  const keys = reset?.type === 'PasswordReset' && reset.data.claimedUnverified ? await revokeApiKeysCreatedBefore(ctx, { ...ucc, authMethod: 'system' }, user.id, reset.data.resetAt) : { position: 0 };
  return { position: Math.max(r.position, revoked.position, keys.position) };
}
