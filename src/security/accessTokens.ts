import jwt from 'jsonwebtoken';
import { createSecretKey, KeyObject } from 'node:crypto';
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

/** The claims of a valid access token; 401 UNAUTHORIZED (or TOKEN_EXPIRED) otherwise. */
export function verifyAccessToken(k: Pick<AccessTokenKeys, 'jwtSecret'>, token: string): AccessClaims {
  const unauthorized = () => new DomainError('UNAUTHORIZED', 'Missing or invalid token.');
  try {
    const decoded = jwt.verify(token, signingKey(k.jwtSecret), { algorithms: ['HS256'] });
    if (typeof decoded !== 'object' || decoded === null || decoded.typ !== 'access' || typeof decoded.sub !== 'string' || typeof decoded.sid !== 'string') {
      throw unauthorized();
    }
    return decoded as unknown as AccessClaims;
  } catch (err) {
    if (err instanceof jwt.TokenExpiredError) throw new DomainError('TOKEN_EXPIRED', 'The access token has expired; refresh it.');
    throw unauthorized();
  }
}
