import { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppContext, RateLimiterLike } from '../app/context';
import { HttpError } from './errors';

function isRejection(x: unknown): x is { msBeforeNext: number; remainingPoints: number } {
  return typeof x === 'object' && x !== null && 'msBeforeNext' in x;
}

/** Consume one point for `key`; sets X-RateLimit-* headers; throws 429 RATE_LIMITED over the limit. */
export async function consumeRateLimit(ctx: AppContext, limiter: RateLimiterLike, limit: number, key: string, res: Response): Promise<void> {
  if (!ctx.config.rateLimits) return;
  try {
    const r = await limiter.consume(key);
    res.setHeader('X-RateLimit-Limit', String(limit));
    res.setHeader('X-RateLimit-Remaining', String(Math.max(0, r.remainingPoints)));
    res.setHeader('X-RateLimit-Reset', String(Math.ceil((Date.now() + r.msBeforeNext) / 1000)));
  } catch (err) {
    if (!isRejection(err)) throw err;
    const retryAfter = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
    const headers = {
      'X-RateLimit-Limit': String(limit),
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(Math.ceil((Date.now() + err.msBeforeNext) / 1000)),
      'Retry-After': String(retryAfter),
    };
    throw new HttpError(429, 'RATE_LIMITED', `Too many requests; retry in ${retryAfter} s.`, { retryAfter }, headers);
  }
}

/** Middleware: `points` per minute, keyed by `keyOf(req)` (user id, IP, token hash ...). */
export function rateLimit(ctx: AppContext, name: string, perMinute: number, keyOf: (req: Request) => string): RequestHandler {
  const limiter = ctx.rateLimiter({ keyPrefix: name, points: perMinute, durationSeconds: 60 });
  return (req: Request, res: Response, next: NextFunction) => {
    consumeRateLimit(ctx, limiter, perMinute, keyOf(req), res).then(() => next(), next);
  };
}

export const byUser = (req: Request): string => req.auth?.userId ?? req.ip ?? 'anonymous';
export const byIp = (req: Request): string => req.ip ?? 'unknown';
