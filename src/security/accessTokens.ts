import jwt from 'jsonwebtoken';
import { createSecretKey, KeyObject, randomUUID } from 'node:crypto';
import { DomainError } from '../domain/errors';

/** Every API key starts with this, so a bearer token tells at a glance which kind it is. */
export const API_KEY_PREFIX = 'kb_';

export interface AccessClaims {
  sub: string;
  sid: string;
  typ: 'access';
}

/** What signing and verifying an access token needs (AppContext satisfies it). */
export interface AccessTokenKeys {
  jwtSecret: string;
  config: { accessTokenTtl: number };
}

// jsonwebtoken turns a string secret into a KeyObject on every call (costly under load): do it once.
const keys = new Map<string, KeyObject>();
function signingKey(secret: string): KeyObject {
  let k = keys.get(secret);
  if (!k) {
    k = createSecretKey(Buffer.from(secret, 'utf8'));
    keys.set(secret, k);
  }
  return k;
}

export function signAccessToken(k: AccessTokenKeys, userId: string, sessionId: string): string {
  const claims: AccessClaims = { sub: userId, sid: sessionId, typ: 'access' };
  return jwt.sign(claims, signingKey(k.jwtSecret), { algorithm: 'HS256', expiresIn: k.config.accessTokenTtl });
}

interface VerifiedToken {
  claims: AccessClaims;
  /** The token's `exp` (seconds since the epoch). */
  exp: number;
}

const VERIFIED_LIMIT = 10_000;
/**
 * Access tokens whose signature was verified, by secret and token, until they expire: a client
 * sends the same token with every request, and checking its HMAC (and parsing it) each time
 * costs more than the rest of the authentication. Only the signature and claims are cached:
 * the session behind the token is still looked up per request, so a revocation (sign-out,
 * password reset) takes effect at once.
 */
const verified = new Map<string, Map<string, VerifiedToken>>();

function verifiedFor(secret: string): Map<string, VerifiedToken> {
  let m = verified.get(secret);
  if (!m) {
    m = new Map();
    verified.set(secret, m);
  }
  return m;
}

/** The claims of a valid access token; 401 UNAUTHORIZED (or TOKEN_EXPIRED) otherwise. */
export function verifyAccessToken(k: Pick<AccessTokenKeys, 'jwtSecret'>, token: string): AccessClaims {
  const unauthorized = () => new DomainError('UNAUTHORIZED', 'Missing or invalid token.');
  const cache = verifiedFor(k.jwtSecret);
  const hit = cache.get(token);
  if (hit) {
    // What jsonwebtoken checks: expired once the clock, in whole seconds, reaches `exp`.
    if (Math.floor(Date.now() / 1000) < hit.exp) return hit.claims;
    cache.delete(token);
  }
  try {
    const decoded = jwt.verify(token, signingKey(k.jwtSecret), { algorithms: ['HS256'] });
    if (typeof decoded !== 'object' || decoded === null || decoded.typ !== 'access' || typeof decoded.sub !== 'string' || typeof decoded.sid !== 'string') {
      throw unauthorized();
    }
    const claims = Object.freeze(decoded as unknown as AccessClaims);
    if (typeof decoded.exp === 'number') {
      cache.set(token, { claims, exp: decoded.exp });
      if (cache.size > VERIFIED_LIMIT) cache.delete(cache.keys().next().value as string);
    }
    return claims;
  } catch (err) {
    if (err instanceof jwt.TokenExpiredError) throw new DomainError('TOKEN_EXPIRED', 'The access token has expired; refresh it.');
    throw unauthorized();
  }
}

/** What signing an MFA challenge needs. */
export interface MfaChallengeKeys {
  jwtSecret: string;
  config: { identity: { mfaChallengeTtl: number } };
}

/**
 * The short-lived proof that the password was right, exchanged with a second-factor code
 * for a session (POST /v1/auth/login/mfa). Typed `mfa`, so it never passes as an access token.
 * `password` is a fingerprint of the password it proves (`passwordFingerprint`): once the
 * password changes (a reset, an account claimed through single sign-on) the challenge is void.
 */
export function signMfaChallenge(k: MfaChallengeKeys, userId: string, password: string, sso?: SsoLinkClaim): string {
  const link = sso ? { sso: { iss: sso.issuer, sub: sso.subject } } : {};
  return jwt.sign({ sub: userId, typ: 'mfa', jti: randomUUID(), pwd: password, ...link }, signingKey(k.jwtSecret), { algorithm: 'HS256', expiresIn: k.config.identity.mfaChallengeTtl });
}

/**
 * The provider's identity a single sign-on wants linked to the account, carried by its MFA
 * challenge (signed, so nobody adds one) and recorded only once the second factor is passed.
 */
export interface SsoLinkClaim {
  issuer: string;
  subject: string;
}

function ssoClaimOf(v: unknown): SsoLinkClaim | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const { iss, sub } = v as { iss?: unknown; sub?: unknown };
  return typeof iss === 'string' && typeof sub === 'string' ? { issuer: iss, subject: sub } : undefined;
}

/** The user and challenge id of a valid MFA challenge; 401 UNAUTHORIZED otherwise (expired included). */
export function verifyMfaChallenge(k: Pick<MfaChallengeKeys, 'jwtSecret'>, token: string): { userId: string; challengeId: string; password: string; expiresAtMs: number; sso?: SsoLinkClaim } {
  try {
    const d = jwt.verify(token, signingKey(k.jwtSecret), { algorithms: ['HS256'] });
    if (typeof d === 'object' && d !== null && d.typ === 'mfa' && typeof d.sub === 'string' && typeof d.jti === 'string' && typeof d.pwd === 'string' && typeof d.exp === 'number') {
      const sso = ssoClaimOf((d as { sso?: unknown }).sso);
      // A challenge with a malformed link claim is not ours: refused rather than signed in without its link.
      if ((d as { sso?: unknown }).sso !== undefined && !sso) throw new Error('malformed');
      return { userId: d.sub, challengeId: d.jti, password: d.pwd, expiresAtMs: d.exp * 1000, ...(sso ? { sso } : {}) };
    }
  } catch {
    /* below */
  }
  throw new DomainError('UNAUTHORIZED', 'The sign-in challenge is invalid or has expired; sign in again.');
}
