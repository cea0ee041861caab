import { Request, Response } from 'express';
import * as t from 'io-ts';
import { AppContext } from '../../app/context';
import { login, logout, refresh } from '../../../commands/user/userCommands';
import { DomainError } from '../../domain/errors';
import { boundedString, decode, strict } from '../codecs';
import { commandContext } from '../exec';
import { byIp, rateLimit } from '../rateLimit';
import { RouteModule, router } from './module';
import { RouteDocs } from '../openapi/routeDocs';

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

/** The JSON body codecs of these routes (property tests walk them). */
export const consoleAuthBodies = { SessionBody };

/** The API description of these routes (the web console's cookie session; each needs `X-KB-Console: 1`). */
export const consoleAuthDocs: RouteDocs = {
  'POST /auth/console/session': { summary: 'Console sign-in: sets the httpOnly refresh cookie, answers an access token', body: SessionBody, auth: false },
  'POST /auth/console/renew': { summary: 'Console: a new access token from the refresh cookie (rotated)', auth: false },
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

  const setCookie = (res: Response, token: string) => {
    res.cookie(CONSOLE_COOKIE, token, { httpOnly: true, sameSite: 'strict', secure, path: CONSOLE_COOKIE_PATH, maxAge: ctx.config.refreshTokenTtl * 1000 });
  };
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
    const r = await login(ctx, commandContext(ctx, req), body);
    await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
    setCookie(res, r.refreshToken);
    noStore(res);
    res.json({ accessToken: r.accessToken, expiresIn: r.expiresIn });
  });

  v1.post('/auth/console/renew', credentialLimit, async (req, res) => {
    sameOrigin(req);
    noStore(res);
    const token = cookieOf(req, CONSOLE_COOKIE);
    if (!token) throw new DomainError('UNAUTHORIZED', 'No console session.');
    try {
      const r = await refresh(ctx, commandContext(ctx, req), token);
      await ctx.runner.waitFor(r.position, ctx.config.readYourWritesMs);
      setCookie(res, r.refreshToken);
      res.json({ accessToken: r.accessToken, expiresIn: r.expiresIn });
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
