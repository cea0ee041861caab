import { randomBytes } from 'node:crypto';
import { AppContext } from '../../src/app/context';
import { CommandContext, handleCommand } from '../../src/core/commandHandler';
import { DomainError } from '../../src/domain/errors';
import { userDecider } from '../../src/domain/user/deciders';
import { userStream } from '../../src/domain/user/events';
import { identityKeys } from '../../src/security/identityKeys';
import { verifyMfaChallenge } from '../../src/security/accessTokens';
import { base32Encode, matchTotp, newTotpSecret, otpauthUri } from '../../src/security/totp';
import { sha256Hex } from '../../src/util/crypto';
import { sessionsCollection, usersCollection, UserView } from '../../projections/user/userProjection';
import { passwordFingerprint, SessionOrigin, startSession } from './userCommands';
import { linkSsoIdentity } from './sso';

export const RECOVERY_CODES = 10;
const ISSUER = 'Knowledge Base';

const invalidCode = () => new DomainError('INVALID_MFA_CODE', 'The code is not valid.');

/** `abcde-fghij`: 50 random bits, easy to type. Compared without case or dashes. */
const newRecoveryCode = (): string => {
  const s = base32Encode(randomBytes(7)).slice(0, 10).toLowerCase();
  return `${s.slice(0, 5)}-${s.slice(5)}`;
};
const normalizeRecoveryCode = (code: string): string => code.toLowerCase().replace(/[\s-]/g, '');
const recoveryHash = (code: string): string => sha256Hex(`kb-recovery:${normalizeRecoveryCode(code)}`);

/**
 * The last TOTP step accepted per user in this process: a code is good once (RFC 6238 §5.2).
 * Bounded; a restart forgets it (the code's own 30 s window still bounds a replay).
 */
const lastStep = new Map<string, number>();
const MAX_REMEMBERED = 10_000;
function acceptStep(userId: string, step: number): boolean {
  if ((lastStep.get(userId) ?? -1) >= step) return false;
  lastStep.delete(userId);
  lastStep.set(userId, step);
  if (lastStep.size > MAX_REMEMBERED) lastStep.delete(lastStep.keys().next().value as string);
  return true;
}

/**
 * Challenges already exchanged for a session in this process (id → when it expires): one
 * challenge, one session (a challenge seen again after its success is refused, whatever the code).
 */
const spentChallenges = new Map<string, number>();
function spendChallenge(challengeId: string, expiresAtMs: number, nowMs: number): boolean {
  if (spentChallenges.has(challengeId)) return false;
  spentChallenges.set(challengeId, expiresAtMs);
  if (spentChallenges.size > MAX_REMEMBERED) {
    for (const [id, exp] of spentChallenges) if (exp <= nowMs) spentChallenges.delete(id);
    // Still full of live ones: the oldest go (each is at most KB_MFA_CHALLENGE_TTL old).
    while (spentChallenges.size > MAX_REMEMBERED) spentChallenges.delete(spentChallenges.keys().next().value as string);
  }
  return true;
}

async function userOf(ctx: AppContext, userId: string): Promise<UserView> {
  const user = await usersCollection(ctx.readStore).get(userId);
  if (!user) throw new DomainError('USER_NOT_FOUND', 'User not found.');
  return user;
}

const stream = (u: UserView) => userStream(sha256Hex(u.email));

/** The step of a TOTP code that matches the user's sealed seed and was not used before in this process; null otherwise. */
function totpStep(ctx: AppContext, user: UserView, code: string, now: Date): number | null {
  if (!user.mfaSealedSecret) return null;
  const seed = identityKeys(ctx).openSeed(user.mfaSealedSecret, user.id);
  if (!seed) return null;
  const step = matchTotp(seed, code, now);
  return step !== null && acceptStep(user.id, step) ? step : null;
}

/**
 * Start (or restart) enrolment: a new seed, shown once as an otpauth URI; stored sealed.
 * Only from a session signed in recently (KB_MFA_ENROL_SIGNIN_AGE): a stolen refresh token
 * keeps a session alive for days, and a second factor of the thief's own would lock the owner
 * out for good (a reset leaves it on).
 */
export async function startTotpEnrollment(ctx: AppContext, cc: CommandContext, userId: string, sessionId: string) {
  const session = await sessionsCollection(ctx.readStore).get(sessionId);
  const maxAge = ctx.config.identity.mfaEnrolSigninAge;
  const signedInAt = session && session.userId === userId && !session.revoked ? Date.parse(session.createdAt ?? '') : NaN;
  if (!(cc.now.getTime() - signedInAt <= maxAge * 1000))
    throw new DomainError('FORBIDDEN', `Sign in again to set up two-step sign-in: it needs a sign-in of the last ${maxAge >= 120 ? `${Math.round(maxAge / 60)} minutes` : `${maxAge} seconds`}.`);
  const user = await userOf(ctx, userId);
  // On an address nobody confirmed, a second factor would let whoever registered it keep the owner out for good
  // (the owner's reset confirms the address but leaves the factor on): confirmed accounts only.
  if (user.emailVerified !== true) throw new DomainError('EMAIL_NOT_VERIFIED', 'Confirm your e-mail address first (the mailed link; POST /v1/auth/resend-verification mails it again): two-step sign-in is set up on a confirmed account only.');
  const seed = newTotpSecret();
  const sealedSecret = identityKeys(ctx).sealSeed(seed, user.id);
  const r = await handleCommand(ctx.eventStore, stream(user), userDecider, { type: 'StartMfaEnrollment', sealedSecret, now: cc.now }, cc);
  return { otpauthUri: otpauthUri(seed, user.email, ISSUER), secret: base32Encode(seed), position: r.position };
}

/** Confirm enrolment with a code from the app: MFA is on; the recovery codes are shown once. */
export async function confirmTotp(ctx: AppContext, cc: CommandContext, userId: string, code: string) {
  const user = await userOf(ctx, userId);
  if (user.mfa === 'on') throw new DomainError('MFA_ALREADY_ENABLED', 'Two-factor authentication is already enabled.');
  if (user.mfa !== 'pending' || !user.mfaSealedSecret) throw new DomainError('MFA_NOT_ENROLLED', 'Start the enrolment first (POST /v1/auth/mfa/totp).');
  if (totpStep(ctx, user, code, cc.now) === null) throw invalidCode();
  const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
  const r = await handleCommand(ctx.eventStore, stream(user), userDecider, { type: 'ConfirmMfa', sealedSecret: user.mfaSealedSecret, recoveryCodeHashes: codes.map(recoveryHash), now: cc.now }, cc);
  return { recoveryCodes: codes, position: r.position };
}

/**
 * A TOTP code (its step recorded on the user's stream: a replay is refused by every process,
 * after a restart too), or a recovery code (spent by an event). Throws INVALID_MFA_CODE.
 */
async function checkSecondFactor(ctx: AppContext, cc: CommandContext, user: UserView, code: string): Promise<number> {
  const trimmed = code.trim();
  if (/^\d{6}$/.test(trimmed)) {
    const step = totpStep(ctx, user, trimmed, cc.now);
    if (step === null) throw invalidCode();
    const r = await handleCommand(ctx.eventStore, stream(user), userDecider, { type: 'AcceptTotpCode', step, now: cc.now }, { ...cc, actorId: user.id });
    return r.position;
  }
  const r = await handleCommand(ctx.eventStore, stream(user), userDecider, { type: 'UseRecoveryCode', codeHash: recoveryHash(trimmed), now: cc.now }, { ...cc, actorId: user.id });
  return r.position;
}

/** Second step of a sign-in with MFA: the challenge from 401 MFA_REQUIRED and a code. */
export async function loginWithMfa(ctx: AppContext, cc: CommandContext, input: { challenge: string; code: string }, origin: SessionOrigin) {
  const challenge = verifyMfaChallenge(ctx, input.challenge);
  const void_ = () => new DomainError('UNAUTHORIZED', 'The sign-in challenge is invalid or has expired; sign in again.');
  if (spentChallenges.has(challenge.challengeId)) throw void_();
  const user = await userOf(ctx, challenge.userId).catch(() => {
    throw void_();
  });
  if (user.mfa !== 'on') throw void_();
  // The password it proved is no longer the account's (reset, or claimed through single sign-on).
  if (challenge.password !== passwordFingerprint(user.passwordHash)) throw void_();
  await checkSecondFactor(ctx, cc, user, input.code);
  // Checked and spent with no wait between: of two concurrent successes with one challenge, one session.
  if (!spendChallenge(challenge.challengeId, challenge.expiresAtMs, cc.now.getTime())) throw void_();
  // A single sign-on's challenge: the provider's `sub` is linked now that the factor is passed (never before).
  const link = challenge.sso ? await linkSsoIdentity(ctx, cc, user.id, user.email, challenge.sso) : { position: 0 };
  const session = await startSession(ctx, cc, user.id, origin, 'mfa');
  return { ...session, position: Math.max(link.position, session.position) };
}

/** The challenge's id and user (for the attempt limits), without checking anything else. */
export const challengeOf = (ctx: AppContext, challenge: string): { challengeId: string; userId: string } => verifyMfaChallenge(ctx, challenge);

/** Turn MFA off; needs a current code (or a recovery code). */
export async function disableTotp(ctx: AppContext, cc: CommandContext, userId: string, code: string) {
  const user = await userOf(ctx, userId);
  if (user.mfa !== 'on') throw new DomainError('MFA_NOT_ENROLLED', 'Two-factor authentication is not enabled.');
  await checkSecondFactor(ctx, cc, user, code);
  const r = await handleCommand(ctx.eventStore, stream(user), userDecider, { type: 'DisableMfa', now: cc.now }, cc);
  return { position: r.position };
}
