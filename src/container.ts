import 'reflect-metadata';
import { container, DependencyContainer } from 'tsyringe';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { Logger } from 'pino';
import { AppContext, APP_CONTEXT, CONFIG, LOGGER, RateLimiterFactory } from './app/context';
import { projectionFactories, serviceFactories } from './app/features';
import { Config } from './config/config';
import { ProjectionRunner } from './core/projectionRunner';
import { EVENT_STORE, EventStore } from './ports/eventStore';
import { READ_STORE, ReadStore } from './ports/readStore';
import { SEARCH_INDEX, SearchIndex } from './ports/searchIndex';
import { EMBEDDINGS, EmbeddingProvider } from './ports/embeddings';
import { BLOB_STORE, BlobStore } from './ports/blobStore';
import { SqliteEventStore } from './adapters/sqlite/sqliteEventStore';
import { SqliteReadStore } from './adapters/sqlite/sqliteReadStore';
import { EmbeddedSearchIndex } from './adapters/embedded/embeddedSearchIndex';
import { FsBlobStore } from './adapters/fs/fsBlobStore';
import { createEmbeddingProvider } from './adapters/embeddings/factory';
import { EncryptingEventStore } from './adapters/encryption/encryptingEventStore';
import { SqliteKeyStore } from './adapters/sqlite/sqliteKeyStore';

/** The JWT secret: from the environment, else generated once and kept owner-only in the data dir. */
function jwtSecret(config: Config): string {
  if (config.jwtSecret) return config.jwtSecret;
  const file = path.join(config.dataDir, 'jwt-secret');
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  const secret = randomBytes(48).toString('base64url');
  fs.writeFileSync(file, secret, { mode: 0o600, flag: 'wx' });
  return secret;
}

const memoryRateLimiter: RateLimiterFactory = (o) => new RateLimiterMemory({ keyPrefix: o.keyPrefix, points: o.points, duration: o.durationSeconds });

/**
 * Composition root: picks each port's adapter from the configuration, registers it in
 * the tsyringe container under its token, and assembles the application context.
 */
export async function buildContainer(config: Config, logger: Logger): Promise<{ di: DependencyContainer; ctx: AppContext }> {
  fs.mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const di = container.createChildContainer();
  di.register(CONFIG, { useValue: config });
  di.register(LOGGER, { useValue: logger });

  // Document text in events is sealed with a per-document key (erasure = destroying the key).
  const eventStore: EventStore = new EncryptingEventStore(
    new SqliteEventStore(path.join(config.dataDir, 'events.db'), { synchronous: config.durability }),
    new SqliteKeyStore(path.join(config.dataDir, 'keys.db')),
  );
  const readStore: ReadStore = new SqliteReadStore(path.join(config.dataDir, 'read.db'));
  const searchIndex: SearchIndex = new EmbeddedSearchIndex(path.join(config.dataDir, 'search.db'));
  const blobStore: BlobStore = new FsBlobStore(path.join(config.dataDir, 'blobs'));
  const embeddings: EmbeddingProvider = createEmbeddingProvider(config);
  di.register(EVENT_STORE, { useValue: eventStore });
  di.register(READ_STORE, { useValue: readStore });
  di.register(SEARCH_INDEX, { useValue: searchIndex });
  di.register(BLOB_STORE, { useValue: blobStore });
  di.register(EMBEDDINGS, { useValue: embeddings });

  const base = { config, logger, eventStore, readStore, searchIndex, blobStore, embeddings, rateLimiter: memoryRateLimiter, jwtSecret: jwtSecret(config), now: () => new Date() };
  const projections = projectionFactories.map((f) => f(base));
  const runner = new ProjectionRunner(eventStore, projections, logger);
  const ctx: AppContext = { ...base, projections, runner, services: [] };
  ctx.services.push(...serviceFactories.map((f) => f(ctx)));
  di.register(APP_CONTEXT, { useValue: ctx });
  return { di, ctx };
}

export async function closeContext(ctx: AppContext): Promise<void> {
  for (const s of [...ctx.services].reverse()) await s.stop().catch(() => undefined);
  await ctx.runner.stop();
  await ctx.embeddings.close().catch(() => undefined);
  await ctx.searchIndex.close().catch(() => undefined);
  await ctx.eventStore.close();
  await ctx.readStore.close();
}
