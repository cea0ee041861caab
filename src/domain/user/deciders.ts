import { domainError } from '../errors';
import { ApiKeyEvent, SessionEvent, UserEvent } from './events';

// ---- user ---------------------------------------------------------------

export type UserState = { exists: false } | { exists: true; userId: string };
export type RegisterUser = { type: 'RegisterUser'; userId: string; email: string; name: string; passwordHash: string; now: Date };

export const userDecider = {
  initialState: (): UserState => ({ exists: false }),
  evolve: (_s: UserState, e: UserEvent): UserState => {
    switch (e.type) {
      case 'UserRegistered':
        return { exists: true, userId: e.data.userId };
      default: {
        const _never: never = e.type;
        return _never;
      }
    }
  },
  decide: (c: RegisterUser, s: UserState): UserEvent[] => {
    if (s.exists) throw domainError('EMAIL_TAKEN', 'An account with this email already exists.');
    return [{ type: 'UserRegistered', data: { userId: c.userId, email: c.email, name: c.name, passwordHash: c.passwordHash, registeredAt: c.now.toISOString() } }];
  },
};

// ---- API key --------------------------------------------------------------

export type ApiKeyState = { status: 'none' } | { status: 'active' | 'revoked'; keyId: string; userId: string };
export type ApiKeyCommand =
  | { type: 'CreateApiKey'; keyId: string; userId: string; name: string; prefix: string; keyHash: string; now: Date }
  | { type: 'RevokeApiKey'; userId: string; now: Date };

export const apiKeyDecider = {
  initialState: (): ApiKeyState => ({ status: 'none' }),
  evolve: (s: ApiKeyState, e: ApiKeyEvent): ApiKeyState => {
    switch (e.type) {
      case 'ApiKeyCreated':
        return { status: 'active', keyId: e.data.keyId, userId: e.data.userId };
      case 'ApiKeyRevoked':
        return s.status === 'none' ? s : { ...s, status: 'revoked' };
      default: {
        const _never: never = e;
        return _never;
      }
    }
  },
  decide: (c: ApiKeyCommand, s: ApiKeyState): ApiKeyEvent[] => {
    switch (c.type) {
      case 'CreateApiKey':
        if (s.status !== 'none') throw domainError('CONFLICT', 'API key already exists.');
        return [{ type: 'ApiKeyCreated', data: { keyId: c.keyId, userId: c.userId, name: c.name, prefix: c.prefix, keyHash: c.keyHash, createdAt: c.now.toISOString() } }];
      case 'RevokeApiKey':
        // Another user's key is reported as missing: its existence is not revealed.
        if (s.status === 'none' || s.userId !== c.userId) throw domainError('API_KEY_NOT_FOUND', 'API key not found.');
        if (s.status === 'revoked') return [];
        return [{ type: 'ApiKeyRevoked', data: { keyId: s.keyId, userId: s.userId, revokedAt: c.now.toISOString() } }];
      default: {
        const _never: never = c;
        return _never;
      }
    }
  },
};

// ---- session (refresh-token family) ------------------------------------------

export type SessionState =
  | { status: 'none' }
  | { status: 'active' | 'revoked'; sessionId: string; userId: string; currentHash: string; usedHashes: string[]; expiresAt: string };

export type SessionCommand =
  | { type: 'StartSession'; sessionId: string; userId: string; refreshTokenHash: string; expiresAt: Date }
  | { type: 'RotateRefreshToken'; presentedHash: string; newHash: string; expiresAt: Date; now: Date }
  | { type: 'EndSession'; presentedHash: string };

export const sessionDecider = {
  initialState: (): SessionState => ({ status: 'none' }),
  evolve: (s: SessionState, e: SessionEvent): SessionState => {
    switch (e.type) {
      case 'SessionStarted':
        return { status: 'active', sessionId: e.data.sessionId, userId: e.data.userId, currentHash: e.data.refreshTokenHash, usedHashes: [], expiresAt: e.data.expiresAt };
      case 'RefreshTokenRotated':
        if (s.status === 'none') return s;
        return { ...s, currentHash: e.data.refreshTokenHash, usedHashes: [...s.usedHashes, e.data.previousHash], expiresAt: e.data.expiresAt };
      case 'SessionRevoked':
        return s.status === 'none' ? s : { ...s, status: 'revoked' };
      default: {
        const _never: never = e;
        return _never;
      }
    }
  },
  /**
   * Refresh tokens rotate: each is good once. Presenting one that was already used means
   * it leaked, so the whole family is revoked (and the caller gets 401).
   */
  decide: (c: SessionCommand, s: SessionState): SessionEvent[] => {
    switch (c.type) {
      case 'StartSession':
        if (s.status !== 'none') throw domainError('CONFLICT', 'Session already exists.');
        return [{ type: 'SessionStarted', data: { sessionId: c.sessionId, userId: c.userId, refreshTokenHash: c.refreshTokenHash, expiresAt: c.expiresAt.toISOString() } }];
      case 'RotateRefreshToken': {
        if (s.status === 'none') throw domainError('UNAUTHORIZED', 'Invalid refresh token.');
        if (s.status === 'revoked') throw domainError('UNAUTHORIZED', 'Invalid refresh token.');
        if (s.usedHashes.includes(c.presentedHash)) {
          return [{ type: 'SessionRevoked', data: { sessionId: s.sessionId, userId: s.userId, reason: 'reuse_detected' } }];
        }
        if (s.currentHash !== c.presentedHash) throw domainError('UNAUTHORIZED', 'Invalid refresh token.');
        if (Date.parse(s.expiresAt) <= c.now.getTime()) throw domainError('TOKEN_EXPIRED', 'Refresh token expired.');
        return [
          {
            type: 'RefreshTokenRotated',
            data: { sessionId: s.sessionId, userId: s.userId, previousHash: c.presentedHash, refreshTokenHash: c.newHash, expiresAt: c.expiresAt.toISOString() },
          },
        ];
      }
      case 'EndSession':
        if (s.status !== 'active' || (s.currentHash !== c.presentedHash && !s.usedHashes.includes(c.presentedHash))) return [];
        return [{ type: 'SessionRevoked', data: { sessionId: s.sessionId, userId: s.userId, reason: 'logout' } }];
      default: {
        const _never: never = c;
        return _never;
      }
    }
  },
};
