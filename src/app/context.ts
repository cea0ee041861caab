import { Logger } from 'pino';
import { Config } from '../config/config';
import { ProjectionRunner } from '../core/projectionRunner';
import { Projection } from '../core/projection';
import { EventStore } from '../ports/eventStore';
import { ReadStore } from '../ports/readStore';
import { SearchIndex } from '../ports/searchIndex';
import { EmbeddingModels, EmbeddingProvider } from '../ports/embeddings';
import { BlobStore } from '../ports/blobStore';
import { IdentityProvider } from '../ports/identityProvider';
import { Warmup } from './warmup';
import { Metrics } from '../ports/metrics';
import { LogVerifier } from '../ports/logVerifier';
import { Revocations } from '../security/revocations';

/** Creates a rate limiter: `points` per `durationSeconds` per key. */
export interface RateLimiterLike {
  consume(key: string, points?: number): Promise<{ remainingPoints: number; msBeforeNext: number }>;
  /** The key's state without consuming (null: nothing consumed in this window). */
  get(key: string): Promise<{ remainingPoints: number; msBeforeNext: number } | null>;
}
export type RateLimiterFactory = (opts: { keyPrefix: string; points: number; durationSeconds: number }) => RateLimiterLike;

/** Everything the HTTP layer, the processor and the CLI need, resolved at the composition root. */
export interface AppContext {
  config: Config;
  logger: Logger;
  eventStore: EventStore;
  readStore: ReadStore;
  runner: ProjectionRunner;
  /**
   * Revocations (API keys, sessions, search links, members) this process appended that the read
   * models may not have applied yet: authentication, link resolution and membership checks refuse
   * them at once, whatever the projections' lag (src/security/revocations.ts).
   */
  revocations: Revocations;
  projections: Projection[];
  searchIndex: SearchIndex;
  /** Embeds document chunks (the processor). */
  embeddings: EmbeddingProvider;
  /** Embeds search queries: the composition root puts a cache in front (repeated queries and MCP retries skip the model). */
  queryEmbeddings: EmbeddingProvider;
  /**
   * Every model this deployment can embed with: the configured one (`embeddings`) and, during
   * a model change, the one the search index still answers with (see src/search/activeEmbedder.ts).
   */
  embeddingModels: EmbeddingModels;
  /** A fresh, empty, throw-away read store (time travel folds the past into one); the caller closes it. */
  scratchReadStore: () => ReadStore;
  blobStore: BlobStore;
  rateLimiter: RateLimiterFactory;
  /** The organisation's OpenID provider (KB_OIDC_ISSUER), when configured. */
  identityProvider?: IdentityProvider;
  /** Re-checks the log's hash chain for an owner's "verify the log" (the SQLite log only; absent elsewhere). */
  logVerifier?: LogVerifier;
  /** Operational metrics (/metrics). */
  metrics: Metrics;
  jwtSecret: string;
  /** The clock; only the edges read it. */
  now: () => Date;
  /** The embedding model's background warm-up at start-up (reported on /readyz). */
  warmup: Warmup;
  /** Background services (document processor ...) started with the app; stopped on close. */
  services: { name: string; start(): Promise<void>; stop(): Promise<void> }[];
}

export const APP_CONTEXT = Symbol('APP_CONTEXT');
export const CONFIG = Symbol('CONFIG');
export const LOGGER = Symbol('LOGGER');
