import { domainError } from '../errors';
import { ApiKeyEvent, SessionEvent, UserEvent } from './events';

// ---- user ---------------------------------------------------------------

/** `lastStep`: the 30-second step of the last TOTP code accepted while on (a code is good once). */
export type MfaState = { status: 'off' } | { status: 'pending'; sealedSecret: string } | { status: 'on'; sealedSecret: string; recoveryCodeHashes: Set<string>; lastStep?: number };

export type UserState =
  | { exists: false }
  | {
      exists: true;
      userId: string;
      emailVerified: boolean;
      /** Outstanding verification requests: requestId → expiresAt (ISO). */
      verifications: Map<string, string>;
      /** Outstanding password resets: requestId → expiresAt (ISO); all are void once one is used. */
      resets: Map<string, string>;
      /** Requests already used (single use). */
      used: Set<string>;
      mfa: MfaState;
      /** OpenID issuer → subject linked to this account. */
      sso: Map<string, string>;
    };

export type RegisterUser = {
  type: 'RegisterUser';
  userId: string;
  email: string;
  name: string;
  passwordHash: string;
  now: Date;
  /** Ask for a verification mail in the same append. */
  verification?: { requestId: string; expiresAt: Date };
  /** The address is already proven (an e-mailed invitation was accepted). */
  emailVerified?: boolean;
  invitation?: { workspaceId: string; invitationId: string };
};
export type UserCommand =
  | RegisterUser
  | { type: 'RequestEmailVerification'; requestId: string; email: string; expiresAt: Date }
  | { type: 'VerifyEmail'; requestId: string; now: Date }
  | { type: 'RequestPasswordReset'; requestId: string; email: string; expiresAt: Date }
  | { type: 'ResetPassword'; requestId: string; passwordHash: string; now: Date }
  | { type: 'StartMfaEnrollment'; sealedSecret: string; now: Date }
  | { type: 'ConfirmMfa'; sealedSecret: string; recoveryCodeHashes: string[]; now: Date }
  | { type: 'UseRecoveryCode'; codeHash: string; now: Date }
  | { type: 'AcceptTotpCode'; step: number; now: Date }
  | { type: 'DisableMfa'; now: Date }
  /** `passwordHash`: of a random secret, replacing the password when the account's address was never proven. */
  | { type: 'LinkSsoIdentity'; issuer: string; subject: string; passwordHash: string; now: Date };

const invalidToken = () => domainError('INVALID_TOKEN', 'The link is invalid or has already been used.');

export const userDecider = {
  initialState: (): UserState => ({ exists: false }),
  evolve: (s: UserState, e: UserEvent): UserState => {
    if (e.type === 'UserRegistered') {
      return { exists: true, userId: e.data.userId, emailVerified: e.data.emailVerified === true, verifications: new Map(), resets: new Map(), used: new Set(), mfa: { status: 'off' }, sso: new Map() };
    }
    if (!s.exists) return s;
    switch (e.type) {
      case 'EmailVerificationRequested':
        return { ...s, verifications: new Map(s.verifications).set(e.data.requestId, e.data.expiresAt) };
      case 'EmailVerified': {
        return { ...s, emailVerified: true, verifications: new Map(), used: new Set(s.used).add(e.data.requestId) };
      }
      case 'PasswordResetRequested':
        return { ...s, resets: new Map(s.resets).set(e.data.requestId, e.data.expiresAt) };
      case 'PasswordReset':
        return { ...s, resets: new Map(), used: new Set(s.used).add(e.data.requestId), ...(e.data.claimedUnverified ? { emailVerified: true, verifications: new Map<string, string>() } : {}) };
      case 'MfaEnrollmentStarted':
        return { ...s, mfa: { status: 'pending', sealedSecret: e.data.sealedSecret } };
      case 'MfaEnabled':
        return s.mfa.status === 'off' ? s : { ...s, mfa: { status: 'on', sealedSecret: s.mfa.sealedSecret, recoveryCodeHashes: new Set(e.data.recoveryCodeHashes) } };
      case 'MfaRecoveryCodeUsed': {
        if (s.mfa.status !== 'on') return s;
        const left = new Set(s.mfa.recoveryCodeHashes);
        left.delete(e.data.codeHash);
        return { ...s, mfa: { ...s.mfa, recoveryCodeHashes: left } };
      }
      case 'MfaDisabled':
        return { ...s, mfa: { status: 'off' } };
      case 'MfaCodeAccepted':
        return s.mfa.status === 'on' ? { ...s, mfa: { ...s.mfa, lastStep: Math.max(s.mfa.lastStep ?? -1, e.data.step) } } : s;
      case 'SsoIdentityLinked':
        return { ...s, sso: new Map(s.sso).set(e.data.issuer, e.data.subject), ...(e.data.claimedUnverified ? { emailVerified: true, verifications: new Map<string, string>() } : {}) };
      default: {
        const _never: never = e;
        return _never;
      }
    }
  },
  decide: (c: UserCommand, s: UserState): UserEvent[] => {
    if (c.type === 'RegisterUser') {
      if (s.exists) throw domainError('EMAIL_TAKEN', 'An account with this email already exists.');
      const registered: UserEvent = {
        type: 'UserRegistered',
        data: { userId: c.userId, email: c.email, name: c.name, passwordHash: c.passwordHash, registeredAt: c.now.toISOString(), ...(c.emailVerified ? { emailVerified: true } : {}), ...(c.invitation ? { invitation: c.invitation } : {}) },
      };
      if (!c.verification || c.emailVerified) return [registered];
      return [registered, { type: 'EmailVerificationRequested', data: { userId: c.userId, requestId: c.verification.requestId, email: c.email, expiresAt: c.verification.expiresAt.toISOString() } }];
    }
    if (!s.exists) throw domainError('USER_NOT_FOUND', 'User not found.');
    const userId = s.userId;
    switch (c.type) {
      case 'RequestEmailVerification':
        if (s.emailVerified) return [];
        return [{ type: 'EmailVerificationRequested', data: { userId, requestId: c.requestId, email: c.email, expiresAt: c.expiresAt.toISOString() } }];
      case 'VerifyEmail': {
        const expiresAt = s.verifications.get(c.requestId);
        if (expiresAt === undefined || s.used.has(c.requestId)) throw invalidToken();
        if (Date.parse(expiresAt) <= c.now.getTime()) throw domainError('EXPIRED', 'The link has expired; ask for a new one.');
        return [{ type: 'EmailVerified', data: { userId, requestId: c.requestId, verifiedAt: c.now.toISOString() } }];
      }
      case 'RequestPasswordReset':
        return [{ type: 'PasswordResetRequested', data: { userId, requestId: c.requestId, email: c.email, expiresAt: c.expiresAt.toISOString() } }];
      case 'ResetPassword': {
        const expiresAt = s.resets.get(c.requestId);
        if (expiresAt === undefined || s.used.has(c.requestId)) throw invalidToken();
        if (Date.parse(expiresAt) <= c.now.getTime()) throw domainError('EXPIRED', 'The link has expired; ask for a new one.');
        // The mailed link proves the address; if nothing had before, what was made without that proof goes (API keys: see the process manager).
        return [{ type: 'PasswordReset', data: { userId, requestId: c.requestId, passwordHash: c.passwordHash, resetAt: c.now.toISOString(), ...(s.emailVerified ? {} : { claimedUnverified: true as const }) } }];
      }
      case 'StartMfaEnrollment':
        if (s.mfa.status === 'on') throw domainError('MFA_ALREADY_ENABLED', 'Two-factor authentication is already enabled; disable it first.');
        return [{ type: 'MfaEnrollmentStarted', data: { userId, sealedSecret: c.sealedSecret, startedAt: c.now.toISOString() } }];
      case 'ConfirmMfa':
        if (s.mfa.status === 'on') throw domainError('MFA_ALREADY_ENABLED', 'Two-factor authentication is already enabled.');
        if (s.mfa.status !== 'pending' || s.mfa.sealedSecret !== c.sealedSecret) throw domainError('MFA_NOT_ENROLLED', 'Start the enrolment first.');
        return [{ type: 'MfaEnabled', data: { userId, recoveryCodeHashes: c.recoveryCodeHashes, enabledAt: c.now.toISOString() } }];
      case 'UseRecoveryCode':
        if (s.mfa.status !== 'on' || !s.mfa.recoveryCodeHashes.has(c.codeHash)) throw domainError('INVALID_MFA_CODE', 'The code is not valid.');
        return [{ type: 'MfaRecoveryCodeUsed', data: { userId, codeHash: c.codeHash, usedAt: c.now.toISOString() } }];
      case 'AcceptTotpCode':
        // Replayed (this step or an older one was accepted already, maybe by another process): refused.
        if (s.mfa.status !== 'on' || (s.mfa.lastStep !== undefined && c.step <= s.mfa.lastStep)) throw domainError('INVALID_MFA_CODE', 'The code is not valid.');
        return [{ type: 'MfaCodeAccepted', data: { userId, step: c.step, acceptedAt: c.now.toISOString() } }];
      case 'DisableMfa':
        if (s.mfa.status === 'off') return [];
        return [{ type: 'MfaDisabled', data: { userId, disabledAt: c.now.toISOString() } }];
      case 'LinkSsoIdentity': {
        const linked = s.sso.get(c.issuer);
        if (linked === c.subject) return [];
        // The provider now names another person with this address: never merge them silently.
        if (linked !== undefined) throw domainError('SSO_ACCOUNT_MISMATCH', 'This account is linked to another identity at the provider.');
        // An address nobody proved (registered without confirming it): the provider's word makes it
        // the owner's, and the password whoever registered it chose stops working (pre-registration hijack).
        const claim = s.emailVerified ? {} : { claimedUnverified: true as const, passwordHash: c.passwordHash };
        return [{ type: 'SsoIdentityLinked', data: { userId, issuer: c.issuer, subject: c.subject, linkedAt: c.now.toISOString(), ...claim } }];
      }
      default: {
        const _never: never = c;
        return _never;
      }
    }
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
  | { type: 'StartSession'; sessionId: string; userId: string; refreshTokenHash: string; expiresAt: Date; device?: string; ipHash?: string; now?: Date; method?: 'password' | 'mfa' | 'sso' }
  | { type: 'RotateRefreshToken'; presentedHash: string; newHash: string; expiresAt: Date; now: Date }
  | { type: 'EndSession'; presentedHash: string }
  /** Revoke by the owner (`userId` must match: another user's session is reported missing). */
  | { type: 'RevokeSession'; userId: string; reason: 'revoked_by_user' | 'password_reset' | 'account_claimed' };

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
        return [
          {
            type: 'SessionStarted',
            data: {
              sessionId: c.sessionId,
              userId: c.userId,
              refreshTokenHash: c.refreshTokenHash,
              expiresAt: c.expiresAt.toISOString(),
              ...(c.device !== undefined ? { device: c.device } : {}),
              ...(c.ipHash !== undefined ? { ipHash: c.ipHash } : {}),
              ...(c.now ? { startedAt: c.now.toISOString() } : {}),
              ...(c.method ? { method: c.method } : {}),
            },
          },
        ];
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
      case 'RevokeSession':
        if (s.status === 'none' || s.userId !== c.userId) throw domainError('SESSION_NOT_FOUND', 'Session not found.');
        if (s.status === 'revoked') return [];
        return [{ type: 'SessionRevoked', data: { sessionId: s.sessionId, userId: s.userId, reason: c.reason } }];
      default: {
        const _never: never = c;
        return _never;
      }
    }
  },
};
