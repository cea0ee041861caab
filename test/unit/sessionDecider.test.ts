import { apiKeyDecider, sessionDecider, userDecider } from '../../src/domain/user/deciders';
import { SessionEvent } from '../../src/domain/user/events';
import { specFor } from '../support/given';

const now = new Date('2026-01-01T00:00:00.000Z');
const later = new Date('2026-01-08T00:00:00.000Z');
const started: SessionEvent = { type: 'SessionStarted', data: { sessionId: 's', userId: 'u', refreshTokenHash: 'h1', expiresAt: later.toISOString() } };
const rotated: SessionEvent = { type: 'RefreshTokenRotated', data: { sessionId: 's', userId: 'u', previousHash: 'h1', refreshTokenHash: 'h2', expiresAt: later.toISOString() } };

describe('session decider (refresh-token rotation)', () => {
  const spec = specFor(sessionDecider);
  it('rotates the current refresh token', () => {
    spec([started]).when({ type: 'RotateRefreshToken', presentedHash: 'h1', newHash: 'h2', expiresAt: later, now }).then([rotated]);
  });
  it('revokes the whole family when a used token is presented again', () => {
    spec([started, rotated]).when({ type: 'RotateRefreshToken', presentedHash: 'h1', newHash: 'h3', expiresAt: later, now }).then([
      { type: 'SessionRevoked', data: { sessionId: 's', userId: 'u', reason: 'reuse_detected' } },
    ]);
  });
  it('refuses unknown, revoked and expired tokens', () => {
    spec([started]).when({ type: 'RotateRefreshToken', presentedHash: 'zz', newHash: 'h3', expiresAt: later, now }).thenThrows('UNAUTHORIZED');
    spec([]).when({ type: 'RotateRefreshToken', presentedHash: 'h1', newHash: 'h3', expiresAt: later, now }).thenThrows('UNAUTHORIZED');
    const revoked: SessionEvent = { type: 'SessionRevoked', data: { sessionId: 's', userId: 'u', reason: 'logout' } };
    spec([started, revoked]).when({ type: 'RotateRefreshToken', presentedHash: 'h1', newHash: 'h3', expiresAt: later, now }).thenThrows('UNAUTHORIZED');
    spec([started]).when({ type: 'RotateRefreshToken', presentedHash: 'h1', newHash: 'h3', expiresAt: later, now: new Date('2026-01-09T00:00:00Z') }).thenThrows('TOKEN_EXPIRED');
  });
  it('logout revokes once and is idempotent', () => {
    spec([started]).when({ type: 'EndSession', presentedHash: 'h1' }).then([{ type: 'SessionRevoked', data: { sessionId: 's', userId: 'u', reason: 'logout' } }]);
    spec([started, { type: 'SessionRevoked', data: { sessionId: 's', userId: 'u', reason: 'logout' } }]).when({ type: 'EndSession', presentedHash: 'h1' }).then([]);
    spec([started]).when({ type: 'EndSession', presentedHash: 'wrong' }).then([]);
  });
});

describe('user and API key deciders', () => {
  it('an email registers once', () => {
    const spec = specFor(userDecider);
    const reg = { type: 'RegisterUser' as const, userId: 'u', email: 'a@b.c', name: 'A', passwordHash: 'x', now };
    const [e] = spec([]).when(reg).result();
    expect(e.type).toBe('UserRegistered');
    spec([e]).when(reg).thenThrows('EMAIL_TAKEN');
  });
  it('only the owner of a key can revoke it; revoking twice changes nothing', () => {
    const spec = specFor(apiKeyDecider);
    const created = { type: 'ApiKeyCreated' as const, data: { keyId: 'k', userId: 'u', name: 'ci', prefix: 'kb_abc', keyHash: 'h', createdAt: now.toISOString() } };
    spec([created]).when({ type: 'RevokeApiKey', userId: 'other', now }).thenThrows('API_KEY_NOT_FOUND');
    spec([created]).when({ type: 'RevokeApiKey', userId: 'u', now }).then([{ type: 'ApiKeyRevoked', data: { keyId: 'k', userId: 'u', revokedAt: now.toISOString() } }]);
    spec([created, { type: 'ApiKeyRevoked', data: { keyId: 'k', userId: 'u', revokedAt: now.toISOString() } }]).when({ type: 'RevokeApiKey', userId: 'u', now }).then([]);
  });
});
