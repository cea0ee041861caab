import { DomainEvent } from '../event';
import { EventCatalog } from '../eventTraits';

export type UserRegistered = DomainEvent<'UserRegistered', { userId: string; email: string; name: string; passwordHash: string; registeredAt: string }>;
export type UserEvent = UserRegistered;

export type ApiKeyCreated = DomainEvent<'ApiKeyCreated', { keyId: string; userId: string; name: string; prefix: string; keyHash: string; createdAt: string }>;
export type ApiKeyRevoked = DomainEvent<'ApiKeyRevoked', { keyId: string; userId: string; revokedAt: string }>;
export type ApiKeyEvent = ApiKeyCreated | ApiKeyRevoked;

export type SessionStarted = DomainEvent<'SessionStarted', { sessionId: string; userId: string; refreshTokenHash: string; expiresAt: string }>;
export type RefreshTokenRotated = DomainEvent<'RefreshTokenRotated', { sessionId: string; userId: string; previousHash: string; refreshTokenHash: string; expiresAt: string }>;
export type SessionRevoked = DomainEvent<'SessionRevoked', { sessionId: string; userId: string; reason: 'logout' | 'reuse_detected' }>;
export type SessionEvent = SessionStarted | RefreshTokenRotated | SessionRevoked;

export const userStream = (emailHash: string): string => `user-${emailHash}`;
export const apiKeyStream = (keyId: string): string => `apikey-${keyId}`;
export const sessionStream = (sessionId: string): string => `session-${sessionId}`;

/** Audit and encryption traits of account events (see EventTraits); accounts are outside workspace audit. */
export const userEventTraits: EventCatalog<UserEvent | ApiKeyEvent | SessionEvent> = {
  UserRegistered: { audit: [], encrypted: [] },
  ApiKeyCreated: { audit: ['name'], encrypted: [] },
  ApiKeyRevoked: { audit: [], encrypted: [] },
  SessionStarted: { audit: [], encrypted: [] },
  RefreshTokenRotated: { audit: [], encrypted: [] },
  SessionRevoked: { audit: ['reason'], encrypted: [] },
};
