import { randomUUID } from 'node:crypto';
import { AppContext } from '../../src/app/context';
import { CommandContext, handleCommand } from '../../src/core/commandHandler';
import { DomainError } from '../../src/domain/errors';
import { apiKeyDecider, sessionDecider, userDecider } from '../../src/domain/user/deciders';
import { apiKeyStream, sessionStream, userStream } from '../../src/domain/user/events';
import { hashPassword, randomToken, sha256Hex, verifyPassword } from '../../src/util/crypto';
import { usersCollection } from '../../projections/user/userProjection';
import { signAccessToken, signMfaChallenge, API_KEY_PREFIX } from '../../src/security/accessTokens';
import { identityKeys } from '../../src/security/identityKeys';
import { deviceLabel } from './sessions';

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/** What an MFA challenge remembers of the password it proves (its stored hash, salted, hashed again and cut). */
export const passwordFingerprint = (passwordHash: string): string => sha256Hex(`kb-mfa-challenge:${passwordHash}`).slice(0, 24);

/** Register an account; a verification mail is asked for in the same append (unless `emailVerified`). */
export async function registerUser(ctx: AppContext, cc: CommandContext, input: { email: string; password: string; name: string; emailVerified?: boolean; userId?: string; invitation?: { workspaceId: string; invitationId: string } }) {
  const email = normalizeEmail(input.email);
  const userId = input.userId ?? randomUUID();
  const passwordHash = await hashPassword(input.password);
  const verification = { requestId: randomUUID(), expiresAt: new Date(cc.now.getTime() + ctx.config.identity.verificationTtl * 1000) };
  const r = await handleCommand(
    ctx.eventStore,
    userStream(sha256Hex(email)),
    userDecider,
    { type: 'RegisterUser', userId, email, name: input.name.trim(), passwordHash, now: cc.now, verification, emailVerified: input.emailVerified, invitation: input.invitation },
    { ...cc, actorId: userId },
  );
  const e = r.events[0];
  if (e.type !== 'UserRegistered') throw new Error('unexpected event');
  return { user: e.data, position: r.position };
}

/** Where a session was started from (shown in the session list). */
export interface SessionOrigin {
  userAgent?: string;
  ip?: string;
}

/** Refresh tokens are `<sessionId>.<secret>`; only the hash of the whole token is stored. */
function newRefreshToken(sessionId: string): { token: string; hash: string } {
  const token = `${sessionId}.${randomToken(32)}`;
  return { token, hash: sha256Hex(token) };
}

function sessionIdOf(refreshToken: string): string {
  const id = refreshToken.split('.')[0];
  if (!/^[0-9a-f-]{36}$/.test(id)) throw new DomainError('UNAUTHORIZED', 'Invalid refresh token.');
  return id;
}

/**
 * Check the password. With a second factor enrolled no session starts: 401 MFA_REQUIRED
 * carries a short-lived challenge for POST /v1/auth/login/mfa.
 */
export async function login(ctx: AppContext, cc: CommandContext, input: { email: string; password: string }, origin: SessionOrigin = {}) {
  const user = (await usersCollection(ctx.readStore).find({ email: normalizeEmail(input.email) }, { limit: 1 }))[0];
  // Hash even when the user is unknown, so timing does not reveal which emails exist.
  const ok = user ? await verifyPassword(input.password, user.passwordHash) : (await hashPassword(input.password), false);
  if (!user || !ok) throw new DomainError('INVALID_CREDENTIALS', 'Invalid email or password.');
  if (user.mfa === 'on') {
    throw new DomainError('MFA_REQUIRED', 'Enter the code from your authenticator app.', { challenge: signMfaChallenge(ctx, user.id, passwordFingerprint(user.passwordHash)), expiresIn: ctx.config.identity.mfaChallengeTtl });
  }
  return startSession(ctx, cc, user.id, origin, 'password');
}

/** Start a session (a refresh-token family) for a user whose credentials were checked. */
export async function startSession(ctx: AppContext, cc: CommandContext, userId: string, origin: SessionOrigin, method: 'password' | 'mfa' | 'sso') {
  const sessionId = randomUUID();
  const refresh = newRefreshToken(sessionId);
  const expiresAt = new Date(cc.now.getTime() + ctx.config.refreshTokenTtl * 1000);
  const keys = identityKeys(ctx);
  const r = await handleCommand(
    ctx.eventStore,
    sessionStream(sessionId),
    sessionDecider,
    { type: 'StartSession', sessionId, userId, refreshTokenHash: refresh.hash, expiresAt, device: deviceLabel(origin.userAgent), ipHash: origin.ip ? keys.ipHash(origin.ip) : undefined, now: cc.now, method },
    { ...cc, actorId: userId, authMethod: 'session' },
  );
  return { accessToken: signAccessToken(ctx, userId, sessionId), refreshToken: refresh.token, expiresIn: ctx.config.accessTokenTtl, position: r.position };
}

export async function refresh(ctx: AppContext, cc: CommandContext, refreshToken: string) {
  const sessionId = sessionIdOf(refreshToken);
  const next = newRefreshToken(sessionId);
  const expiresAt = new Date(cc.now.getTime() + ctx.config.refreshTokenTtl * 1000);
  const r = await handleCommand(ctx.eventStore, sessionStream(sessionId), sessionDecider, { type: 'RotateRefreshToken', presentedHash: sha256Hex(refreshToken), newHash: next.hash, expiresAt, now: cc.now }, { ...cc, authMethod: 'session' });
  const e = r.events[0];
  if (!e || e.type !== 'RefreshTokenRotated') {
    // Reuse of a rotated token: the family was just revoked.
    throw new DomainError('UNAUTHORIZED', 'Refresh token already used; the session has been revoked.');
  }
  return { accessToken: signAccessToken(ctx, e.data.userId, sessionId), refreshToken: next.token, expiresIn: ctx.config.accessTokenTtl, position: r.position };
}

export async function logout(ctx: AppContext, cc: CommandContext, refreshToken: string) {
  let sessionId: string;
  try {
    sessionId = sessionIdOf(refreshToken);
  } catch {
    return { position: 0 };
  }
  const r = await handleCommand(ctx.eventStore, sessionStream(sessionId), sessionDecider, { type: 'EndSession', presentedHash: sha256Hex(refreshToken) }, cc);
  return { position: r.position };
}

export async function createApiKey(ctx: AppContext, cc: CommandContext, userId: string, name: string) {
  const keyId = randomUUID();
  const key = `${API_KEY_PREFIX}${randomToken(32)}`;
  const prefix = key.slice(0, API_KEY_PREFIX.length + 6);
  const r = await handleCommand(ctx.eventStore, apiKeyStream(keyId), apiKeyDecider, { type: 'CreateApiKey', keyId, userId, name, prefix, keyHash: sha256Hex(key), now: cc.now }, cc);
  return { id: keyId, name, key, createdAt: cc.now.toISOString(), position: r.position };
}

export async function revokeApiKey(ctx: AppContext, cc: CommandContext, userId: string, keyId: string) {
  if (!/^[0-9a-f-]{36}$/.test(keyId)) throw new DomainError('API_KEY_NOT_FOUND', 'API key not found.');
  const r = await handleCommand(ctx.eventStore, apiKeyStream(keyId), apiKeyDecider, { type: 'RevokeApiKey', userId, now: cc.now }, cc);
  return { position: r.position };
}
