import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { createRateLimiter } from '../../src/adapters/rateLimiterFactory';

describe('createRateLimiter', () => {
  it('returns an in-memory limiter that allows `points` per window and then refuses', async () => {
    const limiter = createRateLimiter({ points: 2, durationSeconds: 60, keyPrefix: 'test' });
    expect(limiter).toBeInstanceOf(RateLimiterMemory);
    expect((await limiter.consume('ip-1')).remainingPoints).toBe(1);
    expect((await limiter.consume('ip-1')).remainingPoints).toBe(0);
    const refused = await limiter.consume('ip-1').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RateLimiterRes);
    expect((refused as RateLimiterRes).msBeforeNext).toBeGreaterThan(0);
    // Keys are counted apart.
    expect((await limiter.consume('ip-2')).remainingPoints).toBe(1);
  });

  it('refuses nonsensical limits', () => {
    expect(() => createRateLimiter({ points: 0, durationSeconds: 1, keyPrefix: 'x' })).toThrow(RangeError);
    expect(() => createRateLimiter({ points: 1, durationSeconds: 0, keyPrefix: 'x' })).toThrow(RangeError);
  });
});
