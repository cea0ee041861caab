import { NextFunction, Request, Response } from 'express';
import jwt from 'jsonwebtoken';
import { createSecretKey, KeyObject } from 'node:crypto';
import { AppContext } from '../app/context';
import { DomainError } from '../domain/errors';
import { sha256Hex } from '../util/crypto';
import { apiKeysCollection, sessionsCollection, usersCollection } from '../../projections/user/userProjection';
import { membersCollection, memberId } from '../../projections/workspace/workspaceProjection';
import { Role } from '../domain/workspace/events';
import { roleAtLeast } from '../domain/workspace/decider';
import './types';

export const API_KEY_PREFIX = 'kb_';

interface AccessClaims {
  sub: string;
  sid: string;
  typ: 'access';
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

export function signAccessToken(ctx: AppContext, userId: string, sessionId: string): string {
  const claims: AccessClaims = { sub: userId, sid: sessionId, typ: 'access' };
  return jwt.sign(claims, signingKey(ctx.jwtSecret), { algorithm: 'HS256', expiresIn: ctx.config.accessTokenTtl });
}

const unauthorized = (msg = 'Missing or invalid token.') => new DomainError('UNAUTHORIZED', msg);

/** Resolve the bearer token (access JWT or API key) to the caller; throws 401 otherwise. */
export async function authenticateRequest(ctx: AppContext, req: Request): Promise<void> {
  const header = req.headers.authorization;
  if (!header || !/^Bearer\s+\S+$/i.test(header)) throw unauthorized();
  const token = header.replace(/^Bearer\s+/i, '').trim();
  const users = usersCollection(ctx.readStore);
  if (token.startsWith(API_KEY_PREFIX)) {
    const key = (await apiKeysCollection(ctx.readStore).find({ keyHash: sha256Hex(token) }, { limit: 1 }))[0];
    if (!key || key.revoked) throw unauthorized('Invalid or revoked API key.');
    const user = await users.get(key.userId);
    if (!user) throw unauthorized();
    req.auth = { userId: user.id, email: user.email, authMethod: 'api_key', apiKeyId: key.id };
    recordKeyUse(ctx, key.id);
    return;
  }
  let claims: AccessClaims;
  try {
    const decoded = jwt.verify(token, signingKey(ctx.jwtSecret), { algorithms: ['HS256'] });
    if (typeof decoded !== 'object' || decoded === null || decoded.typ !== 'access' || typeof decoded.sub !== 'string' || typeof decoded.sid !== 'string') {
      throw unauthorized();
    }
    claims = decoded as unknown as AccessClaims;
  } catch (err) {
    if (err instanceof jwt.TokenExpiredError) throw new DomainError('TOKEN_EXPIRED', 'The access token has expired; refresh it.');
    throw unauthorized();
  }
  const session = await sessionsCollection(ctx.readStore).get(claims.sid);
  if (!session || session.revoked) throw unauthorized('The session has ended.');
  const user = await users.get(claims.sub);
  if (!user) throw unauthorized();
  req.auth = { userId: user.id, email: user.email, authMethod: 'session', sessionId: session.id };
}

/** API keys' lastUsedAt is operational metadata, kept beside the read models (not an event per request). */
const lastUse = new Map<string, number>();
function recordKeyUse(ctx: AppContext, keyId: string): void {
  const now = ctx.now().getTime();
  const prev = lastUse.get(keyId) ?? 0;
  if (now - prev < 1000) return;
  lastUse.set(keyId, now);
  void ctx.readStore
    .collection<{ id: string; lastUsedAt: string }>('api_key_usage')
    .put({ id: keyId, lastUsedAt: new Date(now).toISOString() })
    .catch((err: unknown) => ctx.logger.warn({ errName: err instanceof Error ? err.name : 'unknown' }, 'recording API key use failed'));
}

export function requireAuth(ctx: AppContext) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    authenticateRequest(ctx, req).then(() => next(), next);
  };
}

export function authOf(req: Request) {
  if (!req.auth) throw unauthorized();
  return req.auth;
}

/**
 * The caller's role in a workspace. Non-members get 404 WORKSPACE_NOT_FOUND (existence
 * is not revealed); members below `needed` get 403 FORBIDDEN.
 */
export async function requireWorkspaceRole(ctx: AppContext, req: Request, workspaceId: string, needed: Role = 'MEMBER'): Promise<Role> {
  const auth = authOf(req);
  const m = await membersCollection(ctx.readStore).get(memberId(workspaceId, auth.userId));
  if (!m) throw new DomainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
  if (!roleAtLeast(m.role, needed)) throw new DomainError('FORBIDDEN', `This action needs the ${needed} role in the workspace.`);
  return m.role;
}
