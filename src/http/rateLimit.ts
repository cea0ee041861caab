import { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppContext, RateLimiterLike } from '../app/context';
import { HttpError } from './errors';
import { DomainError } from '../domain/errors';
import { credentialOf } from './auth';

function isRejection(x: unknown): x is { msBeforeNext: number; remainingPoints: number } {
  return typeof x === 'object' && x !== null && 'msBeforeNext' in x;
}

/** Consume one point for `key`; sets X-RateLimit-* headers; throws 429 RATE_LIMITED over the limit. */
export async function consumeRateLimit(ctx: AppContext, limiter: RateLimiterLike, limit: number, key: string, res: Response, name = 'other'): Promise<void> {
  if (!ctx.config.rateLimits) return;
  try {
    const r = await limiter.consume(key);
    res.setHeader('X-RateLimit-Limit', String(limit));
    res.setHeader('X-RateLimit-Remaining', String(Math.max(0, r.remainingPoints)));
    res.setHeader('X-RateLimit-Reset', String(Math.ceil((Date.now() + r.msBeforeNext) / 1000)));
  } catch (err) {
    if (!isRejection(err)) throw err;
    ctx.metrics.rateLimited(name);
    throw rateLimited(limit, err.msBeforeNext);
  }
}

function rateLimited(limit: number, msBeforeNext: number): HttpError {
  const retryAfter = Math.max(1, Math.ceil(msBeforeNext / 1000));
  const headers = {
    'X-RateLimit-Limit': String(limit),
    'X-RateLimit-Remaining': '0',
    'X-RateLimit-Reset': String(Math.ceil((Date.now() + msBeforeNext) / 1000)),
    'Retry-After': String(retryAfter),
  };
  return new HttpError(429, 'RATE_LIMITED', `Too many requests; retry in ${retryAfter} s.`, { retryAfter }, headers);
}

export interface GuessingGuard {
  /** Before looking a public credential up: 429 once this client IP has spent its budget of failures. */
  before(req: Request): Promise<void>;
  /** After a look-up found nothing: spend one point of the IP's budget (429 once over). */
  failed(req: Request, res: Response): Promise<void>;
}

/**
 * Guessing guard for public credentials (search-link tokens and ids): failed look-ups on
 * /public/<token>, /s/<id> and /mcp/<token> share one budget per client IP
 * (KB_UNKNOWN_TOKEN_PER_MINUTE). Once it is spent, look-ups from that IP are refused before
 * they are made, so a right guess cannot be told from a wrong one until the window ends.
 */
export function guessingGuard(ctx: AppContext): GuessingGuard {
  // One budget for every channel: the same limiter (an in-memory one counts only its own keys).
  let guard = guards.get(ctx);
  if (!guard) guards.set(ctx, (guard = createGuessingGuard(ctx)));
  return guard;
}

const guards = new WeakMap<AppContext, GuessingGuard>();

function createGuessingGuard(ctx: AppContext): GuessingGuard {
  const perMinute = ctx.config.unknownTokenPerMinute;
  const limiter = ctx.rateLimiter({ keyPrefix: 'unknown-credential', points: perMinute, durationSeconds: 60 });
  return {
    before: async (req) => {
      if (!ctx.config.rateLimits) return;
      const state = await limiter.get(byIp(req));
      if (state && state.remainingPoints <= 0) {
        ctx.metrics.rateLimited('unknown-credential');
        throw rateLimited(perMinute, state.msBeforeNext);
      }
    },
    failed: (req, res) => consumeRateLimit(ctx, limiter, perMinute, byIp(req), res, 'unknown-credential'),
  };
}

/** Middleware: `points` per minute, keyed by `keyOf(req)` (user id, IP, token hash ...). */
export function rateLimit(ctx: AppContext, name: string, perMinute: number, keyOf: (req: Request) => string): RequestHandler {
  const limiter = ctx.rateLimiter({ keyPrefix: name, points: perMinute, durationSeconds: 60 });
  return (req: Request, res: Response, next: NextFunction) => {
    // Limits off (KB_RATE_LIMITS=off): not even the key is derived (writes hash the credential).
    if (!ctx.config.rateLimits) return next();
    consumeRateLimit(ctx, limiter, perMinute, keyOf(req), res, name).then(() => next(), next);
  };
}

export const byUser = (req: Request): string => req.auth?.userId ?? req.ip ?? 'anonymous';
export const byIp = (req: Request): string => req.ip ?? 'unknown';

/**
 * Every write under /v1 and /api counts against its credential (the API key, or the session of an
 * access token, whatever the header's spelling; the client IP without a valid one), so one leaked
 * or runaway key cannot create resources without end.
 */
export function writeRateLimit(ctx: AppContext): RequestHandler {
  const points = ctx.config.writeRatePerMinute;
  const limiter = ctx.rateLimiter({ keyPrefix: 'writes', points, durationSeconds: 60 });
  return (req, res, next) => {
    if (req.method === 'GET' || req.method === 'HEAD' || !/^\/(v1|api)\//.test(req.path) || /^\/api\/v1\/(public|mcp|s)\//.test(req.path)) return next();
    // Limits off (KB_RATE_LIMITS=off): not even the credential is looked up.
    if (!ctx.config.rateLimits) return next();
    credentialOf(ctx, req)
      .then((cred) => consumeRateLimit(ctx, limiter, points, cred ? `cred:${cred}` : `ip:${byIp(req)}`, res, 'writes'))
      .then(() => next(), next);
  };
}

const mfaLimiters = new WeakMap<AppContext, RateLimiterLike>();
/**
 * The one limiter of codes per MFA challenge, shared by POST /v1/auth/login/mfa and the
 * console's /v1/auth/console/session/mfa (so the two routes do not give a challenge twice the tries).
 */
export function mfaChallengeLimiter(ctx: AppContext): RateLimiterLike {
  let l = mfaLimiters.get(ctx);
  if (!l) {
    l = ctx.rateLimiter({ keyPrefix: 'mfa-challenge', points: ctx.config.identity.mfaAttemptsPerChallenge, durationSeconds: ctx.config.identity.mfaChallengeTtl });
    mfaLimiters.set(ctx, l);
  }
  return l;
}

export interface MfaFailureLimit {
  /**
   * Run a second-factor check for `userId`: 429 before it when the account has spent its
   * wrong codes for the hour; a wrong code (INVALID_MFA_CODE) spends one.
   */
  guard<T>(userId: string, check: () => Promise<T>): Promise<T>;
}

const mfaFailureLimits = new WeakMap<AppContext, MfaFailureLimit>();
/**
 * Wrong second-factor codes per account per hour (KB_MFA_FAILURES_PER_ACCOUNT_PER_HOUR),
 * counted over every challenge and every route that takes a code (the two sign-in routes and
 * turning TOTP off): the per-challenge limit alone let someone holding the password sign in
 * again for a fresh challenge as often as the per-IP limit allowed, from as many IPs as they had.
 */
export function mfaFailureLimit(ctx: AppContext): MfaFailureLimit {
  let l = mfaFailureLimits.get(ctx);
  if (l) return l;
  const perHour = ctx.config.identity.mfaFailuresPerAccountPerHour;
  const limiter = ctx.rateLimiter({ keyPrefix: 'mfa-account-failures', points: perHour, durationSeconds: 3600 });
  l = {
    guard: async (userId, check) => {
      if (ctx.config.rateLimits) {
        const state = await limiter.get(userId);
        if (state && state.remainingPoints <= 0) {
          ctx.metrics.rateLimited('mfa-account-failures');
          throw rateLimited(perHour, state.msBeforeNext);
        }
      }
      try {
        return await check();
      } catch (err) {
        if (ctx.config.rateLimits && err instanceof DomainError && err.code === 'INVALID_MFA_CODE') {
          // Spent; the wrong code is still answered as wrong (the next one gets the 429).
          await limiter.consume(userId).catch((e: unknown) => {
            if (!isRejection(e)) throw e;
          });
        }
        throw err;
      }
    },
  };
  mfaFailureLimits.set(ctx, l);
  return l;
}
