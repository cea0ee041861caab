import { randomUUID } from 'node:crypto';
import { AppContext } from '../../src/app/context';
import { CommandContext, fold, handleCommand } from '../../src/core/commandHandler';
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

/**
 * How long the answer to a rotation may be asked for again with the token it replaced. A client
 * that never got that answer (a page reloaded while its silent renewal was in flight, a
 * connection cut) still holds the old token; presenting it again was taken for a stolen token
 * and revoked the whole session. Within this window, and while the token that answer issued is
 * still the session's current one (nobody has used it since), the same answer is given again:
 * the same new refresh token (no rotation, no event) and a fresh access token. Outside it, or
 * once the new token has been used, presenting the old one revokes the session as before.
 * Only for the client that asked (the same address and user agent): a thief presenting a
 * stolen token from elsewhere is judged as before, and cannot follow the owner's rotations.
 * (What identity providers call a reuse interval. Kept in this process's memory: on a split
 * deployment a retry that reaches another API process is judged as before.)
 */
export const REFRESH_REPLAY_WINDOW_MS = 30_000;
const REFRESH_REPLAY_MAX = 10_000;
/** By the hash of the token a rotation replaced: the token it issued, and when. */
const lastRotations = new Map<string, { token: string; hash: string; at: number; client: string }>();
/** Who asked, as far as a request tells: its address and user agent (hashed together). */
const clientOf = (origin: SessionOrigin): string => sha256Hex(`${origin.ip ?? ''}\n${origin.userAgent ?? ''}`);

/** Rotations under way, by the hash of the token presented: the same token presented meanwhile waits for that answer. */
const rotating = new Map<string, Promise<unknown>>();

export async function refresh(ctx: AppContext, cc: CommandContext, refreshToken: string, origin: SessionOrigin = {}): Promise<{ accessToken: string; refreshToken: string; expiresIn: number; position: number }> {
  const sessionId = sessionIdOf(refreshToken);
  const presentedHash = sha256Hex(refreshToken);
  const client = clientOf(origin);
  const under = rotating.get(presentedHash);
  if (under) await under.catch(() => undefined);
  const replay = lastRotations.get(presentedHash);
  if (replay && replay.client === client && cc.now.getTime() - replay.at <= REFRESH_REPLAY_WINDOW_MS) {
    const s = fold(sessionDecider, await ctx.eventStore.readStream(sessionStream(sessionId)));
    if (s.status === 'active' && s.currentHash === replay.hash && Date.parse(s.expiresAt) > cc.now.getTime()) {
      return { accessToken: signAccessToken(ctx, s.userId, sessionId), refreshToken: replay.token, expiresIn: ctx.config.accessTokenTtl, position: 0 };
    }
  }
  const rotation = rotate(ctx, cc, sessionId, presentedHash, client);
  rotating.set(presentedHash, rotation);
  try {
    return await rotation;
  } finally {
    if (rotating.get(presentedHash) === rotation) rotating.delete(presentedHash);
  }
}

async function rotate(ctx: AppContext, cc: CommandContext, sessionId: string, presentedHash: string, client: string) {
  const next = newRefreshToken(sessionId);
  const expiresAt = new Date(cc.now.getTime() + ctx.config.refreshTokenTtl * 1000);
  const r = await handleCommand(ctx.eventStore, sessionStream(sessionId), sessionDecider, { type: 'RotateRefreshToken', presentedHash, newHash: next.hash, expiresAt, now: cc.now }, { ...cc, authMethod: 'session' });
  const e = r.events[0];
  if (!e || e.type !== 'RefreshTokenRotated') {
    // Reuse of a rotated token: the family was just revoked.
    throw new DomainError('UNAUTHORIZED', 'Refresh token already used; the session has been revoked.');
  }
  lastRotations.set(presentedHash, { token: next.token, hash: next.hash, at: cc.now.getTime(), client });
  if (lastRotations.size > REFRESH_REPLAY_MAX) lastRotations.delete(lastRotations.keys().next().value as string);
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
