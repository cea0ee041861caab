import { NextFunction, Request, Response } from 'express';
import { AppContext } from '../app/context';
import { DomainError } from '../domain/errors';
import { API_KEY_PREFIX, signAccessToken, verifyAccessToken } from '../security/accessTokens';
import { liveApiKeyByToken, liveSession, userById } from '../../queries/user/authentication';
import { memberRole, unmetIdentityRequirement } from '../../queries/workspace/membership';
import { AuthReadCache } from '../../queries/user/authReadCache';
import { Role } from '../domain/workspace/events';
import { roleAtLeast } from '../domain/workspace/decider';
import { isUuid } from './ids';
import './types';

export { API_KEY_PREFIX, signAccessToken };

const unauthorized = (msg = 'Missing or invalid token.') => new DomainError('UNAUTHORIZED', msg);

/** Resolve the bearer token (access JWT or API key) to the caller; throws 401 otherwise. */
export async function authenticateRequest(ctx: AppContext, req: Request): Promise<void> {
  const header = req.headers.authorization;
  if (!header || !/^Bearer\s+\S+$/i.test(header)) throw unauthorized();
  const token = header.replace(/^Bearer\s+/i, '').trim();
  const cache = authReadCache(ctx);
  if (token.startsWith(API_KEY_PREFIX)) {
    const key = cache ? await cache.liveApiKey(token) : await liveApiKeyByToken(ctx.readStore, token);
    // A revocation this process appended is refused at once, though the read models may still show the key live.
    if (!key || ctx.revocations.isRevoked('api_key', key.id)) throw unauthorized('Invalid or revoked API key.');
    const user = cache ? await cache.user(key.userId) : await userById(ctx.readStore, key.userId);
    if (!user) throw unauthorized();
    req.auth = { userId: user.id, email: user.email, authMethod: 'api_key', apiKeyId: key.id };
    recordKeyUse(ctx, key.id);
    return;
  }
  const claims = verifyAccessToken(ctx, token);
  const session = cache ? await cache.liveSession(claims.sid) : await liveSession(ctx.readStore, claims.sid);
  if (!session || ctx.revocations.isRevoked('session', session.id)) throw unauthorized('The session has ended.');
  const user = cache ? await cache.user(claims.sub) : await userById(ctx.readStore, claims.sub);
  if (!user) throw unauthorized();
  req.auth = { userId: user.id, email: user.email, authMethod: 'session', sessionId: session.id };
}

/**
 * The credential a request's bearer token is, for the per-credential write limit: `key:<id>` of a
 * live API key, `session:<id>` of a valid access token (every token a session is refreshed to is
 * the same credential), null for no or no valid credential (the client IP counts then). Keyed by
 * what the token resolves to, not by the header's text: `bearer`, `BEARER` or more spaces after the
 * scheme name the same credential, and a made-up header is no fresh budget.
 */
export async function credentialOf(ctx: AppContext, req: Request): Promise<string | null> {
  const header = req.headers.authorization;
  if (!header || !/^Bearer\s+\S+$/i.test(header)) return null;
  const token = header.replace(/^Bearer\s+/i, '').trim();
  if (token.startsWith(API_KEY_PREFIX)) {
    const cache = authReadCache(ctx);
    const key = cache ? await cache.liveApiKey(token) : await liveApiKeyByToken(ctx.readStore, token);
    return key && !ctx.revocations.isRevoked('api_key', key.id) ? `key:${key.id}` : null;
  }
  try {
    return `session:${verifyAccessToken(ctx, token).sid}`;
  } catch {
    return null;
  }
}

/**
 * The reads of authentication and membership remembered between requests, when this process
 * runs the projections (its runner tells the cache of every applied batch: AuthReadCache);
 * null in a process whose projections run elsewhere, which reads the store every time.
 */
const authCaches = new WeakMap<AppContext, AuthReadCache | null>();
function authReadCache(ctx: AppContext): AuthReadCache | null {
  let cache = authCaches.get(ctx);
  if (cache === undefined) {
    // Sound only where the projections that write these rows (users, workspaces) are applied by this process's runner.
    const appliedHere = ctx.runner.mode === 'subscribe' && ['users', 'workspaces'].every((name) => ctx.projections.some((p) => p.name === name));
    cache = appliedHere ? new AuthReadCache(ctx.readStore) : null;
    const c = cache;
    if (c) ctx.runner.onApplied((events) => c.applied(events));
    authCaches.set(ctx, cache);
  }
  return cache;
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
 * 403 EMAIL_NOT_VERIFIED / MFA_ENROLMENT_REQUIRED when the workspace's settings
 * (requireVerifiedEmail, requireMfa) ask more of this member than they meet. Non-members and
 * malformed ids pass (the route answers 404 as before). An id in any case is the workspace's
 * (routes lower-case the ids they are given: an upper-case one passed here unchecked before).
 */
export async function enforceIdentityRequirements(ctx: AppContext, req: Request, id: string): Promise<void> {
  const auth = req.auth;
  if (!auth || !isUuid(id)) return;
  const workspaceId = id.toLowerCase();
  if (requestMemo(req).identityMet.has(workspaceId)) return;
  if (!(await roleInRequest(ctx, req, workspaceId, auth.userId))) return;
  const cache = authReadCache(ctx);
  const unmet = cache ? await cache.unmetIdentityRequirement(workspaceId, auth.userId, auth.authMethod) : await unmetIdentityRequirement(ctx.readStore, workspaceId, auth.userId, auth.authMethod);
  if (unmet === 'verified_email') throw new DomainError('EMAIL_NOT_VERIFIED', 'This workspace requires a verified e-mail address.');
  if (unmet === 'mfa') throw new DomainError('MFA_ENROLMENT_REQUIRED', 'This workspace requires two-factor authentication.');
  requestMemo(req).identityMet.add(workspaceId);
}

/**
 * What one request has learnt of its caller's standing (a workspace route checks it in its
 * parameter handler, then again for the role it needs): looked up once per request.
 */
interface RequestMemo {
  roles: Map<string, Promise<Role | null>>;
  identityMet: Set<string>;
}
const memos = new WeakMap<Request, RequestMemo>();

function requestMemo(req: Request): RequestMemo {
  let m = memos.get(req);
  if (!m) {
    m = { roles: new Map(), identityMet: new Set() };
    memos.set(req, m);
  }
  return m;
}

function roleInRequest(ctx: AppContext, req: Request, workspaceId: string, userId: string): Promise<Role | null> {
  const roles = requestMemo(req).roles;
  let role = roles.get(workspaceId);
  if (!role) {
    const cache = authReadCache(ctx);
    const read = cache ? cache.memberRole(workspaceId, userId) : memberRole(ctx.readStore, workspaceId, userId);
    // A removal this process appended counts at once, though the read models may still show the member.
    role = read.then((r) => (ctx.revocations.isMemberRevoked(workspaceId, userId) ? null : ctx.revocations.roleCap(workspaceId, userId, r)));
    roles.set(workspaceId, role);
  }
  return role;
}

/**
 * The caller's role in a workspace. Non-members get 404 WORKSPACE_NOT_FOUND (existence
 * is not revealed); members below `needed` get 403 FORBIDDEN.
 */
/**
 * The caller's standing judged again as it is now: the credential still live (a session not
 * ended, an API key not revoked) and still a member with `needed`. For work that waited after
 * the first check (a search waits for its turn): a member removed, or a key revoked, meanwhile,
 * whose removal or revocation was already answered, gets nothing of that work.
 */
export async function recheckWorkspaceRole(ctx: AppContext, req: Request, workspaceId: string, needed: Role = 'MEMBER'): Promise<void> {
  memos.delete(req);
  await authenticateRequest(ctx, req);
  await requireWorkspaceRole(ctx, req, workspaceId, needed);
}

export async function requireWorkspaceRole(ctx: AppContext, req: Request, workspaceId: string, needed: Role = 'MEMBER'): Promise<Role> {
  const auth = authOf(req);
  const role = await roleInRequest(ctx, req, workspaceId, auth.userId);
  if (!role) throw new DomainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
  if (!roleAtLeast(role, needed)) throw new DomainError('FORBIDDEN', `This action needs the ${needed} role in the workspace.`);
  await enforceIdentityRequirements(ctx, req, workspaceId);
  return role;
}
