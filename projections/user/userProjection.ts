import { Projection, readModelProjection } from '../../src/core/projection';
import { ReadStore } from '../../src/ports/readStore';
import { ApiKeyEvent, SessionEvent, UserEvent } from '../../src/domain/user/events';
import { AuthMethod } from '../../src/domain/event';
import { summarize } from '../../src/audit/summary';

export interface UserView {
  id: string;
  email: string;
  name: string;
  passwordHash: string;
  createdAt: string;
  /** Absent on views built before e-mail verification existed (= false). */
  emailVerified?: boolean;
  /** 'off' | 'pending' (enrolment started) | 'on'. */
  mfa?: 'off' | 'pending' | 'on';
  /** The TOTP seed sealed with the identity key (pending or on). */
  mfaSealedSecret?: string | null;
}

export interface ApiKeyView {
  id: string;
  userId: string;
  name: string;
  prefix: string;
  keyHash: string;
  createdAt: string;
  revoked: boolean;
}

export interface SessionView {
  id: string;
  userId: string;
  revoked: boolean;
  expiresAt: string;
  device?: string | null;
  ipHash?: string | null;
  createdAt?: string | null;
  /** Last refresh (the access token in between is not recorded per request). */
  lastUsedAt?: string | null;
}

/** One security event of an account, as the account's own trail shows it (ids and whitelisted fields only). */
export interface AccountEventView {
  id: string;
  userId: string;
  position: number;
  occurredAt: string;
  action: string;
  authMethod: AuthMethod;
  summary: Record<string, unknown>;
}

export const usersCollection = (store: ReadStore) => store.collection<UserView>('users', [{ fields: ['email'], unique: true }]);
export const apiKeysCollection = (store: ReadStore) =>
  store.collection<ApiKeyView>('api_keys', [{ fields: ['keyHash'], unique: true }, { fields: ['userId'] }]);
export const sessionsCollection = (store: ReadStore) => store.collection<SessionView>('sessions', [{ fields: ['userId'] }]);
export const accountEventsCollection = (store: ReadStore) => store.collection<AccountEventView>('account_events', [{ fields: ['userId', 'position'] }]);

type Handled = UserEvent | ApiKeyEvent | SessionEvent;

export function userProjection(store: ReadStore): Projection {
  const users = usersCollection(store);
  const keys = apiKeysCollection(store);
  const sessions = sessionsCollection(store);
  const trail = accountEventsCollection(store);
  const patchUser = async (userId: string, patch: Partial<UserView>) => {
    const u = await users.get(userId);
    if (u) await users.put({ ...u, ...patch });
  };
  return readModelProjection('users', store, ['users', 'api_keys', 'sessions', 'account_events'], async (event) => {
    const e = event as unknown as Handled;
    // The account's security trail: every account event but the routine token rotation. The
    // projection sees every event of the log: one naming no user (a workspace's tag, say) has
    // no account to show it, and is not stored (no query could return it).
    if (e.type !== 'RefreshTokenRotated' && typeof (event.data as { userId?: unknown }).userId === 'string') {
      await trail.put({
        id: event.id,
        userId: e.data.userId,
        position: event.position,
        occurredAt: event.metadata.occurredAt,
        action: e.type,
        authMethod: event.metadata.authMethod,
        summary: summarize(e.type, e.data),
      });
    }
    switch (e.type) {
      case 'UserRegistered':
        await users.put({
          id: e.data.userId,
          email: e.data.email,
          name: e.data.name,
          passwordHash: e.data.passwordHash,
          createdAt: e.data.registeredAt,
          emailVerified: e.data.emailVerified === true,
          mfa: 'off',
          mfaSealedSecret: null,
        });
        break;
      case 'EmailVerified':
        await patchUser(e.data.userId, { emailVerified: true });
        break;
      case 'PasswordReset':
        await patchUser(e.data.userId, { passwordHash: e.data.passwordHash, ...(e.data.claimedUnverified ? { emailVerified: true } : {}) });
        break;
      case 'MfaEnrollmentStarted':
        await patchUser(e.data.userId, { mfa: 'pending', mfaSealedSecret: e.data.sealedSecret });
        break;
      case 'MfaEnabled':
        await patchUser(e.data.userId, { mfa: 'on' });
        break;
      case 'MfaDisabled':
        await patchUser(e.data.userId, { mfa: 'off', mfaSealedSecret: null });
        break;
      case 'SsoIdentityLinked':
        if (e.data.claimedUnverified && e.data.passwordHash) await patchUser(e.data.userId, { emailVerified: true, passwordHash: e.data.passwordHash });
        break;
      case 'EmailVerificationRequested':
      case 'PasswordResetRequested':
      case 'MfaRecoveryCodeUsed':
      case 'MfaCodeAccepted':
        break;
      case 'ApiKeyCreated':
        await keys.put({ id: e.data.keyId, userId: e.data.userId, name: e.data.name, prefix: e.data.prefix, keyHash: e.data.keyHash, createdAt: e.data.createdAt, revoked: false });
        break;
      case 'ApiKeyRevoked': {
        const k = await keys.get(e.data.keyId);
        if (k) await keys.put({ ...k, revoked: true });
        break;
      }
      case 'SessionStarted':
        await sessions.put({
          id: e.data.sessionId,
          userId: e.data.userId,
          revoked: false,
          expiresAt: e.data.expiresAt,
          device: e.data.device ?? null,
          ipHash: e.data.ipHash ?? null,
          createdAt: e.data.startedAt ?? event.metadata.occurredAt,
          lastUsedAt: e.data.startedAt ?? event.metadata.occurredAt,
        });
        break;
      case 'RefreshTokenRotated': {
        const s = await sessions.get(e.data.sessionId);
        if (s) await sessions.put({ ...s, expiresAt: e.data.expiresAt, lastUsedAt: event.metadata.occurredAt });
        break;
      }
      case 'SessionRevoked': {
        const s = await sessions.get(e.data.sessionId);
        if (s) await sessions.put({ ...s, revoked: true });
        break;
      }
      default:
        break;
    }
  });
}
