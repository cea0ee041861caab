import type { MongoClient } from 'mongodb';
import { RateLimiterAbstract, RateLimiterMemory, RateLimiterMongo } from 'rate-limiter-flexible';

export interface RateLimitSpec {
  /** Requests allowed per window. */
  points: number;
  durationSeconds: number;
  /** Distinguishes limiters sharing a store (e.g. `login`, `api`). */
  keyPrefix: string;
}

export interface RateLimiterStoreOptions {
  /** Database holding the `rate_limits` collection (default `kb`). */
  dbName?: string;
}

/**
 * A rate limiter: in memory (one process; the embedded default) or, given a MongoDB
 * client, in MongoDB so that every API replica counts against the same budget. The
 * Mongo limiter falls back to an in-memory one while MongoDB is unreachable.
 */
export function createRateLimiter(spec: RateLimitSpec, mongoClient?: MongoClient, store: RateLimiterStoreOptions = {}): RateLimiterAbstract {
  if (!Number.isInteger(spec.points) || spec.points <= 0) throw new RangeError(`invalid points ${spec.points}`);
  if (!(spec.durationSeconds > 0)) throw new RangeError(`invalid duration ${spec.durationSeconds}`);
  const base = { points: spec.points, duration: spec.durationSeconds, keyPrefix: spec.keyPrefix };
  if (!mongoClient) return new RateLimiterMemory(base);
  return new RateLimiterMongo({
    ...base,
    storeClient: mongoClient,
    dbName: store.dbName ?? 'kb',
    tableName: 'rate_limits',
    insuranceLimiter: new RateLimiterMemory(base),
  });
}
