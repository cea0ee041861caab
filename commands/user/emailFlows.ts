import { randomInt, randomUUID } from 'node:crypto';
import { AppContext } from '../../src/app/context';
import { CommandContext, handleCommand } from '../../src/core/commandHandler';
import { DomainError } from '../../src/domain/errors';
import { userDecider } from '../../src/domain/user/deciders';
import { userStream } from '../../src/domain/user/events';
import { identityKeys } from '../../src/security/identityKeys';
import { hashPassword, sha256Hex } from '../../src/util/crypto';
import { usersCollection } from '../../projections/user/userProjection';
import { revokeAllSessions, revokeApiKeysCreatedBefore } from './sessions';
import { composeDecoyResetMail } from './identityMailer';

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
 * The steps of a password-reset request, after its answer: a seam for tests, which pass spies.
 * Both kinds of address run `pause`, `findAccount` and `compose`; only an account runs `record`.
 */
export interface ResetRequestSteps {
  /** A random pause (0..KB_FORGOT_PASSWORD_JITTER_MS) before anything: the work does not follow the answer at a fixed time. */
  pause(ms: number): Promise<void>;
  findAccount(email: string): Promise<{ id: string; email: string } | undefined>;
  /** The reset mail composed as the mailer composes it (token under the identity key, link, text), then thrown away. */
  compose(email: string, expiresAt: Date): void;
  /** PasswordResetRequested on the account's stream (the mailer sends the mail from the log). */
  record(user: { id: string; email: string }, expiresAt: Date): Promise<number>;
}

function resetRequestSteps(ctx: AppContext, cc: CommandContext): ResetRequestSteps {
  return {
    pause: (ms) =>
      new Promise<void>((resolve) => {
        // Unref'd: a pending reset request never holds a stopping process open (the request is lost then, as an unsent answer would be).
        setTimeout(resolve, ms).unref();
      }),
    findAccount: async (email) => (await usersCollection(ctx.readStore).find({ email }, { limit: 1 }))[0],
    compose: (email, expiresAt) => composeDecoyResetMail(ctx, email, expiresAt),
    record: async (user, expiresAt) => {
      const r = await handleCommand(ctx.eventStore, userStream(sha256Hex(user.email)), userDecider, { type: 'RequestPasswordReset', requestId: randomUUID(), email: user.email, expiresAt }, { ...cc, actorId: null });
      return r.position;
    },
  };
}

/**
 * Ask for a password-reset mail. The route answers first (the same answer for every address), and this runs
 * after, where its cost must not tell whether the address has an account: an account's request appends an
 * event and, later, the mailer composes and sends the mail; an unknown address did a single read, and a probe
 * right after the answer (GET /healthz) was measurably slower for an account (2.81 ms against 1.71 ms p50).
 *
 * What is done about it, for every address alike:
 *  - the work starts after a random pause of 0..KB_FORGOT_PASSWORD_JITTER_MS (default 2 s; crypto randomness), so
 *    it is not at a fixed time after the answer: a probe finds it somewhere in a 2 s window, and the per-address
 *    limit (KB_FORGOT_PASSWORD_PER_EMAIL_PER_HOUR, 3) leaves few samples to average the noise away;
 *  - both look the address up and compose the reset mail (token HMAC under the identity key, link, text): an
 *    unknown address composes one for made-up ids and throws it away, so the CPU work in the request's own
 *    follow-up is the same;
 *  - what remains only for an account (one append, and the mailer's send, already off the request's path on the
 *    log's subscription) is not imitated: a fake append would write the unknown address to the log, and a fake
 *    send would be a mail. The jitter is what decorrelates them from the answer.
 */
export async function requestPasswordReset(ctx: AppContext, cc: CommandContext, email: string, steps: ResetRequestSteps = resetRequestSteps(ctx, cc)) {
  const jitter = ctx.config.identity.forgotPasswordJitterMs;
  await steps.pause(jitter > 0 ? randomInt(0, jitter + 1) : 0);
  const user = await steps.findAccount(email);
  const expiresAt = new Date(cc.now.getTime() + ctx.config.identity.resetTtl * 1000);
  steps.compose(user?.email ?? email, expiresAt);
  if (!user) return { position: 0 };
  return { position: await steps.record(user, expiresAt) };
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
