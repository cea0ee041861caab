import { DomainEvent } from '../event';
import { EventCatalog } from '../eventTraits';

/**
 * `emailVerified`: the account was created already verified; `invitation`: by accepting this
 * e-mailed invitation (the identity process manager completes the membership from it).
 */
export type UserRegistered = DomainEvent<'UserRegistered', { userId: string; email: string; name: string; passwordHash: string; registeredAt: string; emailVerified?: boolean; invitation?: { workspaceId: string; invitationId: string } }>;
/**
 * A verification or reset mail is due. The token mailed is derived from `requestId` under
 * the install's identity key (src/security/identityKeys.ts): no token, nor anything it can
 * be recovered from, is in the log.
 */
export type EmailVerificationRequested = DomainEvent<'EmailVerificationRequested', { userId: string; requestId: string; email: string; expiresAt: string }>;
export type EmailVerified = DomainEvent<'EmailVerified', { userId: string; requestId: string; verifiedAt: string }>;
export type PasswordResetRequested = DomainEvent<'PasswordResetRequested', { userId: string; requestId: string; email: string; expiresAt: string }>;
/**
 * `claimedUnverified`: the address had never been confirmed before this reset, whose mailed
 * link proves it: the address now counts as verified, and the API keys made before (by whoever
 * registered the address without owning it, perhaps) are revoked with the sessions.
 */
export type PasswordReset = DomainEvent<'PasswordReset', { userId: string; requestId: string; passwordHash: string; resetAt: string; claimedUnverified?: true }>;
/** `sealedSecret`: the TOTP seed sealed with the identity key (AES-256-GCM), never in clear. */
export type MfaEnrollmentStarted = DomainEvent<'MfaEnrollmentStarted', { userId: string; sealedSecret: string; startedAt: string }>;
/** `recoveryCodeHashes`: SHA-256 of each recovery code (random, 50 bits), shown once at confirmation. */
export type MfaEnabled = DomainEvent<'MfaEnabled', { userId: string; recoveryCodeHashes: string[]; enabledAt: string }>;
export type MfaRecoveryCodeUsed = DomainEvent<'MfaRecoveryCodeUsed', { userId: string; codeHash: string; usedAt: string }>;
export type MfaDisabled = DomainEvent<'MfaDisabled', { userId: string; disabledAt: string }>;
/** A TOTP code accepted (sign-in, turning it off): `step` is its 30-second counter; a code of that step or an earlier one is refused after (by every process, after a restart too). */
export type MfaCodeAccepted = DomainEvent<'MfaCodeAccepted', { userId: string; step: number; acceptedAt: string }>;
/** The account signs in through an OpenID provider as `subject` of `issuer`. */
/**
 * `claimedUnverified`: the account's address had never been proven when the provider vouched
 * for it, so whoever registered it (maybe not the address's owner) chose its password: that
 * password is replaced by `passwordHash` (of a random secret nobody knows), the address counts
 * as verified, and the credentials issued before (sessions, API keys) are revoked.
 */
export type SsoIdentityLinked = DomainEvent<'SsoIdentityLinked', { userId: string; issuer: string; subject: string; linkedAt: string; claimedUnverified?: true; passwordHash?: string }>;
export type UserEvent =
  | UserRegistered
  | SsoIdentityLinked
  | EmailVerificationRequested
  | EmailVerified
  | PasswordResetRequested
  | PasswordReset
  | MfaEnrollmentStarted
  | MfaEnabled
  | MfaRecoveryCodeUsed
  | MfaDisabled
  | MfaCodeAccepted;

export type ApiKeyCreated = DomainEvent<'ApiKeyCreated', { keyId: string; userId: string; name: string; prefix: string; keyHash: string; createdAt: string }>;
export type ApiKeyRevoked = DomainEvent<'ApiKeyRevoked', { keyId: string; userId: string; revokedAt: string }>;
export type ApiKeyEvent = ApiKeyCreated | ApiKeyRevoked;

/** `device` (a label from the User-Agent), `ipHash` (keyed hash of the client IP) and `startedAt`: absent on sessions from before they were recorded. */
export type SessionStarted = DomainEvent<
  'SessionStarted',
  { sessionId: string; userId: string; refreshTokenHash: string; expiresAt: string; device?: string; ipHash?: string; startedAt?: string; method?: 'password' | 'mfa' | 'sso' }
>;
export type RefreshTokenRotated = DomainEvent<'RefreshTokenRotated', { sessionId: string; userId: string; previousHash: string; refreshTokenHash: string; expiresAt: string }>;
export type SessionRevoked = DomainEvent<'SessionRevoked', { sessionId: string; userId: string; reason: SessionRevokedReason }>;
export type SessionRevokedReason = 'logout' | 'reuse_detected' | 'revoked_by_user' | 'password_reset' | 'account_claimed';
export type SessionEvent = SessionStarted | RefreshTokenRotated | SessionRevoked;

export const userStream = (emailHash: string): string => `user-${emailHash}`;
export const apiKeyStream = (keyId: string): string => `apikey-${keyId}`;
export const sessionStream = (sessionId: string): string => `session-${sessionId}`;

/** Audit and encryption traits of account events (see EventTraits); accounts are outside workspace audit. */
export const userEventTraits: EventCatalog<UserEvent | ApiKeyEvent | SessionEvent> = {
  UserRegistered: { audit: [], encrypted: [] },
  EmailVerificationRequested: { audit: ['expiresAt'], encrypted: [] },
  EmailVerified: { audit: [], encrypted: [] },
  PasswordResetRequested: { audit: ['expiresAt'], encrypted: [] },
  PasswordReset: { audit: ['claimedUnverified'], encrypted: [] },
  MfaEnrollmentStarted: { audit: [], encrypted: [] },
  MfaEnabled: { audit: [], encrypted: [] },
  MfaRecoveryCodeUsed: { audit: [], encrypted: [] },
  MfaDisabled: { audit: [], encrypted: [] },
  MfaCodeAccepted: { audit: [], encrypted: [] },
  SsoIdentityLinked: { audit: ['issuer', 'claimedUnverified'], encrypted: [] },
  ApiKeyCreated: { audit: ['name'], encrypted: [] },
  ApiKeyRevoked: { audit: [], encrypted: [] },
  SessionStarted: { audit: ['device', 'method'], encrypted: [] },
  RefreshTokenRotated: { audit: [], encrypted: [] },
  SessionRevoked: { audit: ['reason'], encrypted: [] },
};
