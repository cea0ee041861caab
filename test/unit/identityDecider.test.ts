import { sessionDecider, userDecider } from '../../src/domain/user/deciders';
import { SessionEvent, UserEvent } from '../../src/domain/user/events';
import { specFor } from '../support/given';

const now = new Date('2026-01-01T00:00:00.000Z');
const soon = new Date('2026-01-01T00:30:00.000Z');
const late = new Date('2026-01-02T00:00:00.000Z');
const r1 = 'req-1';
const r2 = 'req-2';

const registered: UserEvent = { type: 'UserRegistered', data: { userId: 'u', email: 'a@b.c', name: 'A', passwordHash: 'x', registeredAt: now.toISOString() } };
const verifyAsked = (requestId: string): UserEvent => ({ type: 'EmailVerificationRequested', data: { userId: 'u', requestId, email: 'a@b.c', expiresAt: soon.toISOString() } });
const resetAsked = (requestId: string): UserEvent => ({ type: 'PasswordResetRequested', data: { userId: 'u', requestId, email: 'a@b.c', expiresAt: soon.toISOString() } });

describe('user decider: e-mailed links, MFA, SSO', () => {
  const spec = specFor(userDecider);

  it('registration asks for a verification mail in the same append, unless already verified', () => {
    const c = { type: 'RegisterUser' as const, userId: 'u', email: 'a@b.c', name: 'A', passwordHash: 'x', now, verification: { requestId: r1, expiresAt: soon } };
    expect(spec([]).when(c).result().map((e) => e.type)).toEqual(['UserRegistered', 'EmailVerificationRequested']);
    expect(spec([]).when({ ...c, emailVerified: true }).result().map((e) => e.type)).toEqual(['UserRegistered']);
  });

  it('a verification link works once, before it expires, and only if it was issued', () => {
    spec([registered, verifyAsked(r1)]).when({ type: 'VerifyEmail', requestId: r1, now }).then([{ type: 'EmailVerified', data: { userId: 'u', requestId: r1, verifiedAt: now.toISOString() } }]);
    spec([registered, verifyAsked(r1), { type: 'EmailVerified', data: { userId: 'u', requestId: r1, verifiedAt: now.toISOString() } }]).when({ type: 'VerifyEmail', requestId: r1, now }).thenThrows('INVALID_TOKEN');
    spec([registered, verifyAsked(r1)]).when({ type: 'VerifyEmail', requestId: r1, now: late }).thenThrows('EXPIRED');
    spec([registered]).when({ type: 'VerifyEmail', requestId: r2, now }).thenThrows('INVALID_TOKEN');
    spec([]).when({ type: 'VerifyEmail', requestId: r1, now }).thenThrows('USER_NOT_FOUND');
  });

  it('a reset link works once and voids every other outstanding reset', () => {
    const reset: UserEvent = { type: 'PasswordReset', data: { userId: 'u', requestId: r1, passwordHash: 'new', resetAt: now.toISOString(), claimedUnverified: true } };
    spec([registered, resetAsked(r1), resetAsked(r2)]).when({ type: 'ResetPassword', requestId: r1, passwordHash: 'new', now }).then([reset]);
    // An address confirmed before: a plain reset (the keys made after the confirmation stay).
    const verified: UserEvent = { type: 'EmailVerified', data: { userId: 'u', requestId: r2, verifiedAt: now.toISOString() } };
    const plain: UserEvent = { type: 'PasswordReset', data: { userId: 'u', requestId: r1, passwordHash: 'new', resetAt: now.toISOString() } };
    spec([registered, verifyAsked(r2), verified, resetAsked(r1)]).when({ type: 'ResetPassword', requestId: r1, passwordHash: 'new', now }).then([plain]);
    spec([registered, resetAsked(r1), resetAsked(r2), reset]).when({ type: 'ResetPassword', requestId: r1, passwordHash: 'n', now }).thenThrows('INVALID_TOKEN');
    spec([registered, resetAsked(r1), resetAsked(r2), reset]).when({ type: 'ResetPassword', requestId: r2, passwordHash: 'n', now }).thenThrows('INVALID_TOKEN');
    spec([registered, resetAsked(r1)]).when({ type: 'ResetPassword', requestId: r1, passwordHash: 'n', now: late }).thenThrows('EXPIRED');
    // A verification token is not a reset token.
    spec([registered, verifyAsked(r1)]).when({ type: 'ResetPassword', requestId: r1, passwordHash: 'n', now }).thenThrows('INVALID_TOKEN');
  });

  it('MFA: confirm only the pending seed; recovery codes are single use; disable is idempotent', () => {
    const started: UserEvent = { type: 'MfaEnrollmentStarted', data: { userId: 'u', sealedSecret: 's1', startedAt: now.toISOString() } };
    const enabled: UserEvent = { type: 'MfaEnabled', data: { userId: 'u', recoveryCodeHashes: ['h1', 'h2'], enabledAt: now.toISOString() } };
    spec([registered]).when({ type: 'ConfirmMfa', sealedSecret: 's1', recoveryCodeHashes: [], now }).thenThrows('MFA_NOT_ENROLLED');
    spec([registered, started]).when({ type: 'ConfirmMfa', sealedSecret: 'other', recoveryCodeHashes: [], now }).thenThrows('MFA_NOT_ENROLLED');
    spec([registered, started, enabled]).when({ type: 'StartMfaEnrollment', sealedSecret: 's2', now }).thenThrows('MFA_ALREADY_ENABLED');
    const used: UserEvent = { type: 'MfaRecoveryCodeUsed', data: { userId: 'u', codeHash: 'h1', usedAt: now.toISOString() } };
    spec([registered, started, enabled]).when({ type: 'UseRecoveryCode', codeHash: 'h1', now }).then([used]);
    spec([registered, started, enabled, used]).when({ type: 'UseRecoveryCode', codeHash: 'h1', now }).thenThrows('INVALID_MFA_CODE');
    spec([registered, started, enabled, used]).when({ type: 'UseRecoveryCode', codeHash: 'h2', now }).then([{ ...used, data: { ...used.data, codeHash: 'h2' } }]);
    spec([registered]).when({ type: 'DisableMfa', now }).then([]);
  });

  it('TOTP: a step is accepted once; an older one after it is refused too; none without MFA on', () => {
    const started: UserEvent = { type: 'MfaEnrollmentStarted', data: { userId: 'u', sealedSecret: 's1', startedAt: now.toISOString() } };
    const enabled: UserEvent = { type: 'MfaEnabled', data: { userId: 'u', recoveryCodeHashes: [], enabledAt: now.toISOString() } };
    const accepted: UserEvent = { type: 'MfaCodeAccepted', data: { userId: 'u', step: 100, acceptedAt: now.toISOString() } };
    spec([registered, started, enabled]).when({ type: 'AcceptTotpCode', step: 100, now }).then([accepted]);
    spec([registered, started, enabled, accepted]).when({ type: 'AcceptTotpCode', step: 100, now }).thenThrows('INVALID_MFA_CODE');
    spec([registered, started, enabled, accepted]).when({ type: 'AcceptTotpCode', step: 99, now }).thenThrows('INVALID_MFA_CODE');
    spec([registered, started, enabled, accepted]).when({ type: 'AcceptTotpCode', step: 101, now }).then([{ ...accepted, data: { ...accepted.data, step: 101 } }]);
    spec([registered, started]).when({ type: 'AcceptTotpCode', step: 100, now }).thenThrows('INVALID_MFA_CODE');
  });

  it('SSO: a link is recorded once; another subject of the same issuer is refused', () => {
    const verified: UserEvent = { type: 'EmailVerified', data: { userId: 'u', requestId: 'r', verifiedAt: now.toISOString() } };
    const linked: UserEvent = { type: 'SsoIdentityLinked', data: { userId: 'u', issuer: 'https://idp', subject: 'alice', linkedAt: now.toISOString() } };
    const link = { type: 'LinkSsoIdentity' as const, issuer: 'https://idp', subject: 'alice', passwordHash: 'unusable', now };
    spec([registered, verified]).when(link).then([linked]);
    spec([registered, verified, linked]).when(link).then([]);
    spec([registered, verified, linked]).when({ ...link, subject: 'eve' }).thenThrows('SSO_ACCOUNT_MISMATCH');
  });

  it('SSO: linking an account whose address was never proven claims it (its password replaced, the address verified)', () => {
    const claimed: UserEvent = { type: 'SsoIdentityLinked', data: { userId: 'u', issuer: 'https://idp', subject: 'alice', linkedAt: now.toISOString(), claimedUnverified: true, passwordHash: 'unusable' } };
    const link = { type: 'LinkSsoIdentity' as const, issuer: 'https://idp', subject: 'alice', passwordHash: 'unusable', now };
    spec([registered]).when(link).then([claimed]);
    spec([registered, claimed]).when(link).then([]);
    // Claimed once: the address counts as verified, so a later link of another issuer is a plain link.
    spec([registered, claimed]).when({ ...link, issuer: 'https://other' }).then([{ ...claimed, data: { userId: 'u', issuer: 'https://other', subject: 'alice', linkedAt: now.toISOString() } }]);
  });
});

describe('session decider: revocation by the owner', () => {
  const spec = specFor(sessionDecider);
  const started: SessionEvent = { type: 'SessionStarted', data: { sessionId: 's', userId: 'u', refreshTokenHash: 'h', expiresAt: late.toISOString() } };
  it('only the owner revokes; twice changes nothing', () => {
    spec([started]).when({ type: 'RevokeSession', userId: 'other', reason: 'revoked_by_user' }).thenThrows('SESSION_NOT_FOUND');
    spec([]).when({ type: 'RevokeSession', userId: 'u', reason: 'revoked_by_user' }).thenThrows('SESSION_NOT_FOUND');
    const revoked: SessionEvent = { type: 'SessionRevoked', data: { sessionId: 's', userId: 'u', reason: 'password_reset' } };
    spec([started]).when({ type: 'RevokeSession', userId: 'u', reason: 'password_reset' }).then([revoked]);
    spec([started, revoked]).when({ type: 'RevokeSession', userId: 'u', reason: 'revoked_by_user' }).then([]);
  });
});
