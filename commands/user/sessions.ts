import { AppContext } from '../../src/app/context';
import { CommandContext, handleCommand } from '../../src/core/commandHandler';
import { DomainError } from '../../src/domain/errors';
import { apiKeyDecider, sessionDecider } from '../../src/domain/user/deciders';
import { apiKeyStream, sessionStream } from '../../src/domain/user/events';
import { apiKeysCollection, sessionsCollection } from '../../projections/user/userProjection';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Bound on the sessions one revocation walks (an account has a handful; this only caps abuse). */
const MAX_SESSIONS = 10_000;

/** Revoke one of the caller's sessions (another user's is reported missing). */
export async function revokeSession(ctx: AppContext, cc: CommandContext, userId: string, sessionId: string) {
  if (!UUID.test(sessionId)) throw new DomainError('SESSION_NOT_FOUND', 'Session not found.');
  const r = await handleCommand(ctx.eventStore, sessionStream(sessionId), sessionDecider, { type: 'RevokeSession', userId, reason: 'revoked_by_user' }, cc);
  return { position: r.position };
}

/**
 * Revoke every live session of a user but `keep` (the caller's own, for "sign out the
 * others"). Idempotent: a revoked session is left as it is. Returns the last position written.
 */
export async function revokeAllSessions(ctx: AppContext, cc: CommandContext, userId: string, reason: 'revoked_by_user' | 'password_reset' | 'account_claimed', keep?: string, startedBefore?: string) {
  const live = await sessionsCollection(ctx.readStore).find({ userId, revoked: false }, { limit: MAX_SESSIONS });
  let position = 0;
  let revoked = 0;
  for (const s of live) {
    if (s.id === keep) continue;
    if (startedBefore !== undefined && (s.createdAt ?? '') >= startedBefore) continue;
    const r = await handleCommand(ctx.eventStore, sessionStream(s.id), sessionDecider, { type: 'RevokeSession', userId, reason }, cc);
    position = Math.max(position, r.position);
    revoked += r.events.length;
  }
  return { position, revoked };
}

/**
 * Revoke every live API key of a user created before `createdBefore` (an account claimed
 * through single sign-on: keys made with a password nobody proved the address for).
 */
export async function revokeApiKeysCreatedBefore(ctx: AppContext, cc: CommandContext, userId: string, createdBefore: string) {
  const live = await apiKeysCollection(ctx.readStore).find({ userId, revoked: false }, { limit: MAX_SESSIONS });
  let position = 0;
  for (const k of live) {
    if (k.createdAt >= createdBefore) continue;
    const r = await handleCommand(ctx.eventStore, apiKeyStream(k.id), apiKeyDecider, { type: 'RevokeApiKey', userId, now: cc.now }, cc);
    position = Math.max(position, r.position);
  }
  return { position };
}

/**
 * What linking an account whose address nobody had proven revokes (the route, then the
 * process manager again from the log): the sessions and API keys issued before the link.
 */
export async function revokeClaimedCredentials(ctx: AppContext, cc: CommandContext, userId: string, linkedAt: string) {
  const sessions = await revokeAllSessions(ctx, cc, userId, 'account_claimed', undefined, linkedAt);
  const keys = await revokeApiKeysCreatedBefore(ctx, cc, userId, linkedAt);
  return { position: Math.max(sessions.position, keys.position) };
}

/** A short device label from a User-Agent ("Firefox on Linux"); never the raw header. */
export function deviceLabel(userAgent: string | undefined): string {
  const ua = (userAgent ?? '').slice(0, 512);
  if (!ua) return 'Unknown device';
  const browser = /Edg\//.test(ua)
    ? 'Edge'
    : /OPR\/|Opera/.test(ua)
      ? 'Opera'
      : /Firefox\//.test(ua)
        ? 'Firefox'
        : /Chrome\//.test(ua)
          ? 'Chrome'
          : /Safari\//.test(ua)
            ? 'Safari'
            : /^curl\//.test(ua)
              ? 'curl'
              : /node|undici/i.test(ua)
                ? 'Node.js'
                : /python/i.test(ua)
                  ? 'Python'
                  : 'Unknown client';
  const os = /Windows/.test(ua) ? 'Windows' : /iPhone|iPad/.test(ua) ? 'iOS' : /Android/.test(ua) ? 'Android' : /Mac OS X|Macintosh/.test(ua) ? 'macOS' : /Linux/.test(ua) ? 'Linux' : null;
  return os ? `${browser} on ${os}` : browser;
}
