import { Request, Response } from 'express';
import * as t from 'io-ts';
import { AppContext } from '../../app/context';
import { login, logout, refresh, SessionOrigin } from '../../../commands/user/userCommands';
import { challengeOf, loginWithMfa } from '../../../commands/user/mfa';
import { beginSso } from '../../../commands/user/sso';
import { consumeRateLimit, mfaChallengeLimiter, mfaFailureLimit } from '../rateLimit';
import { DomainError } from '../../domain/errors';
import { boundedString, decode, strict } from '../codecs';
import { commandContext } from '../exec';
import { byIp, rateLimit } from '../rateLimit';
import { RouteModule, router } from './module';
import { RouteDocs } from '../openapi/routeDocs';
import { ConsoleAccess, respond } from '../responses';

/**
 * The web console's session (README "Web console"). The refresh token never reaches page
 * scripts: it lives in an httpOnly, SameSite=Strict cookie whose Path is these routes only;
 * the page keeps the short-lived access token in memory and asks for a new one here.
 * CSRF: SameSite=Strict, plus a custom header a cross-site form cannot send, plus an Origin
 * check when the browser names one.
 */
export const CONSOLE_COOKIE = 'kb_console';
export const CONSOLE_COOKIE_PATH = '/v1/auth/console';
export const CONSOLE_HEADER = 'x-kb-console';

const SessionBody = strict(t.type({ email: boundedString(1, 254), password: boundedString(1, 1024) }));
const MfaBody = strict(t.type({ challenge: boundedString(1, 2048), code: boundedString(1, 64) }));

/** The JSON body codecs of these routes (property tests walk them). */
export const consoleAuthBodies = { SessionBody, MfaBody };

/** The flow cookie of single sign-on (shared with GET /v1/auth/oidc/start; the callback reads it). */
export const OIDC_FLOW_COOKIE = 'kb_oidc';

const originOf = (req: Request): SessionOrigin => ({ userAgent: req.headers['user-agent'], ip: req.ip });

/** Set the console's refresh cookie (also used by the single sign-on callback when the console started it). */
export function setConsoleCookie(ctx: AppContext, res: Response, token: string): void {
  const secure = ctx.config.baseUrl.startsWith('https:') || ctx.config.appUrl.startsWith('https:');
  res.cookie(CONSOLE_COOKIE, token, { httpOnly: true, sameSite: 'strict', secure, path: CONSOLE_COOKIE_PATH, maxAge: ctx.config.refreshTokenTtl * 1000 });
}

/** The API description of these routes (the web console's cookie session; each needs `X-KB-Console: 1`). */
export const consoleAuthDocs: RouteDocs = {
  'POST /auth/console/session': { summary: 'Console sign-in: sets the httpOnly refresh cookie, answers an access token', body: SessionBody, auth: false, response: ConsoleAccess },
  'POST /auth/console/session/mfa': {
    summary: 'Console sign-in, second step: the challenge of 401 MFA_REQUIRED and a TOTP or recovery code; sets the refresh cookie',
    body: MfaBody,
    auth: false,
    response: ConsoleAccess,
  },
  'GET /auth/console/sso': {
    summary: "Console: single sign-on with the organisation's provider (302); the callback sets the console's cookie and returns to /app/",
    description: 'A failed sign-in returns to `/app/signin?ssoError=<code>`. 404 SSO_NOT_CONFIGURED without KB_OIDC_ISSUER.',
    auth: false,
    produces: 'none',
    status: 302,
  },
  'POST /auth/console/renew': { summary: 'Console: a new access token from the refresh cookie (rotated)', auth: false, response: ConsoleAccess },
  'POST /auth/console/logout': { summary: 'Console: end the session and clear the cookie', auth: false, status: 204, produces: 'none' },
};

/** The value of one cookie of the request (the header is parsed here: no cookie middleware). */
export function cookieOf(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (typeof header !== 'string' || header.length > 8192) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) {
      const v = part.slice(eq + 1).trim();
      return v.length > 0 && v.length <= 512 ? v : undefined;
    }
  }
  return undefined;
}

export function consoleAuthRoutes(ctx: AppContext): RouteModule {
  const v1 = router();
  const credentialLimit = rateLimit(ctx, 'auth', 30, byIp);
  const secure = ctx.config.baseUrl.startsWith('https:') || ctx.config.appUrl.startsWith('https:');

  const setCookie = (res: Response, token: string) => setConsoleCookie(ctx, res, token);
  const id = ctx.config.identity;
  const mfaAttemptLimiter = mfaChallengeLimiter(ctx);
  const mfaFailures = mfaFailureLimit(ctx);
  const clearCookie = (res: Response) => res.clearCookie(CONSOLE_COOKIE, { httpOnly: true, sameSite: 'strict', secure, path: CONSOLE_COOKIE_PATH });

  /** Only the console's own pages may call these routes. */
  const sameOrigin = (req: Request) => {
    if (req.headers[CONSOLE_HEADER] !== '1') throw new DomainError('FORBIDDEN', `The console's session routes need the ${CONSOLE_HEADER}: 1 header.`);
    const origin = req.headers.origin;
    if (origin === undefined) return;
    let host: string | undefined;
    try {
      host = new URL(origin).host;
    } catch {
      host = undefined;
    }
    const allowed = new Set([req.headers.host, new URL(ctx.config.appUrl).host, new URL(ctx.config.baseUrl).host]);
    if (!host || !allowed.has(host)) throw new DomainError('FORBIDDEN', 'Cross-origin requests may not use the console session.');
  };
  const noStore = (res: Response) => res.setHeader('Cache-Control', 'no-store');

  v1.post('/auth/console/session', credentialLimit, async (req, res) => {
    sameOrigin(req);
    const body = decode(SessionBody, req.body);
    noStore(res);
    const r = await login(ctx, commandContext(ctx, req), body, originOf(req));
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    setCookie(res, r.refreshToken);
    respond(res, ConsoleAccess, { accessToken: r.accessToken, expiresIn: r.expiresIn });
  });

  // With a second factor enrolled the first step answers 401 MFA_REQUIRED and its challenge: the code comes here.
  v1.post('/auth/console/session/mfa', credentialLimit, async (req, res) => {
    sameOrigin(req);
    noStore(res);
    const body = decode(MfaBody, req.body);
    const challenge = challengeOf(ctx, body.challenge);
    await consumeRateLimit(ctx, mfaAttemptLimiter, id.mfaAttemptsPerChallenge, challenge.challengeId, res);
    const r = await mfaFailures.guard(challenge.userId, () => loginWithMfa(ctx, commandContext(ctx, req), body, originOf(req)));
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    setCookie(res, r.refreshToken);
    respond(res, ConsoleAccess, { accessToken: r.accessToken, expiresIn: r.expiresIn });
  });

  // A top-level navigation from the sign-in page (a link, so no custom header): the flow is marked as the console's, sealed.
  v1.get('/auth/console/sso', credentialLimit, async (_req, res) => {
    const r = await beginSso(ctx, ctx.now(), { console: true });
    res.setHeader('Set-Cookie', `${OIDC_FLOW_COOKIE}=${r.sealedFlow}; Path=/v1/auth/oidc; HttpOnly; SameSite=Lax; Max-Age=600${secure ? '; Secure' : ''}`);
    res.redirect(302, r.url);
  });

  v1.post('/auth/console/renew', credentialLimit, async (req, res) => {
    sameOrigin(req);
    noStore(res);
    const token = cookieOf(req, CONSOLE_COOKIE);
    if (!token) throw new DomainError('UNAUTHORIZED', 'No console session.');
    try {
      const r = await refresh(ctx, commandContext(ctx, req), token, originOf(req));
      await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
      setCookie(res, r.refreshToken);
      respond(res, ConsoleAccess, { accessToken: r.accessToken, expiresIn: r.expiresIn });
    } catch (err) {
      if (err instanceof DomainError) {
        clearCookie(res);
        if (err.code === 'CONFLICT' || err.code === 'TOKEN_EXPIRED') throw new DomainError('UNAUTHORIZED', 'The console session has ended; sign in again.');
      }
      throw err;
    }
  });

  v1.post('/auth/console/logout', async (req, res) => {
    sameOrigin(req);
    const token = cookieOf(req, CONSOLE_COOKIE);
    if (token) {
      try {
        const r = await logout(ctx, commandContext(ctx, req), token);
        await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
      } catch (err) {
        // A stale or already ended session: signing out still clears the cookie.
        if (!(err instanceof DomainError)) throw err;
      }
    }
    clearCookie(res);
    res.status(204).end();
  });

  return { v1, docs: consoleAuthDocs };
}
