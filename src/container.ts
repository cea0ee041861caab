import 'reflect-metadata';
import { container, DependencyContainer } from 'tsyringe';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { Logger } from 'pino';
import { AppContext, APP_CONTEXT, CONFIG, LOGGER, RateLimiterFactory } from './app/context';
import { COMPACT_SEARCH_INDEX, WARM_SEARCH_THREAD, EXTRA_CLOSERS, MONGO_CLIENT, optional, QUERY_EMBEDDINGS, REHEARSAL, STORED_EVENT_STORE } from './app/tokens';
import { connectOrFail, DEFAULT_CONNECT_TIMEOUT_MS } from './app/startup';
import { runsProjections } from './roles/plan';
import { Config } from './config/config';
import { ProjectionRunner } from './core/projectionRunner';
import { observeAppends } from './core/commandHandler';
import { Revocations } from './security/revocations';
import { Projection } from './core/projection';
import { EVENT_STORE, EventStore } from './ports/eventStore';
import { READ_STORE, ReadStore } from './ports/readStore';
import { SEARCH_INDEX, SearchIndex } from './ports/searchIndex';
import { EMBEDDINGS, EmbeddingProvider } from './ports/embeddings';
import { BLOB_STORE, BlobStore } from './ports/blobStore';
import { KEY_STORE, KeyStore } from './ports/keyStore';
import { JOB_QUEUE, JobQueue } from './ports/jobQueue';
import { EVENT_FEED, EventFeed } from './ports/eventFeed';
import { SqliteEventStore } from './adapters/sqlite/sqliteEventStore';
import { SqliteLogVerifier } from './adapters/sqlite/sqliteLogVerifier';
import { LOG_VERIFIER, LogVerifier } from './ports/logVerifier';
import { WalCheckpointer } from './adapters/sqlite/walCheckpointer';
import { SqliteReadStore } from './adapters/sqlite/sqliteReadStore';
import { SqliteKeyStore } from './adapters/sqlite/sqliteKeyStore';
import { EmbeddedSearchIndex } from './adapters/embedded/embeddedSearchIndex';
import { WorkerSearchIndex } from './adapters/embedded/workerSearchIndex';
import type { WarmUpSample } from './adapters/embedded/searchWorkerProtocol';
import { FsBlobStore } from './adapters/fs/fsBlobStore';
import { EventStoreDbEventStore } from './adapters/eventstoredb/eventStoreDbEventStore';
import { MongoReadStore } from './adapters/mongodb/mongoReadStore';
import { GridFsBlobStore } from './adapters/mongodb/gridFsBlobStore';
import { MongoKeyStore } from './adapters/mongodb/mongoKeyStore';
import { ElasticsearchSearchIndex } from './adapters/elasticsearch/elasticsearchSearchIndex';
import { KafkaEventFeed } from './adapters/kafka/kafkaEventFeed';
import { KafkaJobQueue } from './adapters/kafka/kafkaJobQueue';
import { ReadStoreHandledJobs } from './adapters/jobRetry';
import { createRateLimiter } from './adapters/rateLimiterFactory';
import { createEmbeddingProvider, embeddingProviderForModel, LOCAL_EMBEDDERS, localModelId } from './adapters/embeddings/factory';
import { ConfiguredEmbeddingModels } from './app/embeddingModels';
import { Warmup } from './app/warmup';
import { prometheusMetrics } from './adapters/metrics/prometheusMetrics';
import { METRICS, Metrics } from './ports/metrics';
import { registerGauges } from './app/metricsGauges';
import { EncryptingEventStore } from './adapters/encryption/encryptingEventStore';
import { optimizeEmbeddedIndex } from './audit/compact';
import { userProjection } from '../projections/user/userProjection';
import { workspaceProjection } from '../projections/workspace/workspaceProjection';
import { documentProjection } from '../projections/document/documentProjection';
import { searchIndexProjection } from '../projections/searchIndex/searchIndexProjection';
import { instructionSetProjection } from '../projections/instructionSet/instructionSetProjection';
import { searchLinkProjection } from '../projections/searchLink/searchLinkProjection';
import { analyticsProjection } from '../projections/analytics/analyticsProjection';
import { auditProjection } from '../projections/audit/auditProjection';
import { documentProcessorService } from './processing/documentProcessor';
import { reembedderService } from './processing/reembedder';
import { instructionSetDocumentCleanup } from '../commands/instructionSet/documentCleanup';
import { workspaceDeletionCleanup } from '../commands/workspace/workspaceDeletionCleanup';
import { queryHistorySweeper } from '../queries/searchLink/linkUsage';
import { erasureService } from './audit/erasureService';
import { MAIL_SENDER, MailSender } from './ports/mail';
import { IDENTITY_PROVIDER, IdentityProvider } from './ports/identityProvider';
import { outboxMailSender, smtpMailSender } from './adapters/mail/nodemailerMail';
import { identityMailer } from '../commands/user/identityMailer';
import { openidClientProvider } from './adapters/oidc/openidClientProvider';

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
 * Read models kept up to date from the log, in the order they are started and rebuilt.
 * Features add theirs here; each factory resolves the ports it uses by token.
 */
const projectionFactories: ((di: DependencyContainer) => Projection)[] = [
  (di) => userProjection(di.resolve(READ_STORE)),
  (di) => workspaceProjection(di.resolve(READ_STORE)),
  (di) => documentProjection(di.resolve(READ_STORE)),
  (di) => {
    const config = di.resolve<Config>(CONFIG);
    return searchIndexProjection({
      eventStore: di.resolve(EVENT_STORE),
      readStore: di.resolve(READ_STORE),
      searchIndex: di.resolve(SEARCH_INDEX),
      // One process with its own index file: nobody else waits on the index's stored checkpoint.
      lazyCheckpoint: config.role === 'all' && config.searchIndex === 'embedded',
    });
  },
  (di) => instructionSetProjection(di.resolve(READ_STORE)),
  (di) => searchLinkProjection(di.resolve(READ_STORE)),
  (di) => auditProjection(di.resolve(READ_STORE)),
  (di) => analyticsProjection(di.resolve(READ_STORE)),
];

/** Background services (process managers such as the document processor), given the context and their own extras. */
const serviceFactories: ((di: DependencyContainer, ctx: AppContext) => AppContext['services'][number])[] = [
  // The start-up rehearsal's processor leaves the process's spare extraction worker to the server's.
  (di, ctx) => documentProcessorService(ctx, optional<JobQueue>(di, JOB_QUEUE), di.resolve<KeyStore | null>(KEY_STORE), optional<boolean>(di, REHEARSAL) !== true),
  (_di, ctx) => reembedderService(ctx),
  (_di, ctx) => instructionSetDocumentCleanup(ctx),
  (_di, ctx) => workspaceDeletionCleanup(ctx),
  (_di, ctx) => queryHistorySweeper(ctx),
  (di, ctx) => erasureService(ctx, { keyStore: di.resolve(KEY_STORE), afterErasure: optional<() => void>(di, COMPACT_SEARCH_INDEX) }),
  (di, ctx) => identityMailer(ctx, di.resolve<MailSender>(MAIL_SENDER)),
];

async function openEmbeddedIndex(config: Config, logger: Logger): Promise<EmbeddedSearchIndex | WorkerSearchIndex> {
  const file = path.join(config.dataDir, 'search.db');
  const { minChunks, probeLists, minProbe } = config.denseAnn;
  const ann = {
    enabled: config.denseIndex === 'approximate',
    // One threshold: the index is built at this many chunks and used by scopes of at least as many.
    ...(minChunks !== undefined ? { buildAt: minChunks, minScope: minChunks } : {}),
    ...(probeLists !== undefined ? { probeLists } : {}),
    ...(minProbe !== undefined ? { minProbe } : {}),
  };
  if (config.searchThread === 'main') return new EmbeddedSearchIndex(file, { ann });
  return WorkerSearchIndex.open(file, { ann, onCrash: (err) => logger.error({ err }, 'search index worker stopped; starting a new one') });
}

export interface BuildOptions {
  /** Bound on each start-up connection to a production server (default 15 s). */
  connectTimeoutMs?: number;
  /** The caller reads and replays the log only (the CLI: export, verify, rebuild, project): it loads no embedding model ahead of use. */
  logOnly?: boolean;
  /**
   * The start-up rehearsal's throwaway container (src/roles/rehearsal.ts): it borrows the
   * server's embedding model (neither loaded again nor closed with this container), and its
   * document processor leaves the process's spare extraction worker to the server's.
   */
  rehearsal?: { embeddings: EmbeddingProvider };
}

/** The server's model, lent to the rehearsal: every call goes to it, and closing the rehearsal's container leaves it open. */
function borrowed(p: EmbeddingProvider): EmbeddingProvider {
  return {
    modelId: p.modelId,
    dimensions: p.dimensions,
    embed: (texts) => p.embed(texts),
    ...(p.embedDocuments ? { embedDocuments: (texts: string[]) => (p.embedDocuments as (t: string[]) => Promise<Float32Array[]>).call(p, texts) } : {}),
    ...(p.warmup ? { warmup: (o?: { documents?: boolean }) => (p.warmup as (x?: { documents?: boolean }) => Promise<void>).call(p, o) } : {}),
    close: async () => undefined,
  };
}

/** What buildContainer opened so far: released in reverse order when a later step fails. */
type Opened = (() => Promise<unknown>)[];

async function releaseAll(opened: Opened): Promise<void> {
  for (const close of [...opened].reverse()) await close().catch(() => undefined);
}

/**
 * The one composition root: picks each port's adapter from the configuration (KB_EVENT_STORE,
 * KB_READ_STORE, KB_SEARCH_INDEX, KB_FEED, KB_EMBEDDINGS), registers it in a tsyringe child
 * container under its token (the ports' tokens, plus src/app/tokens.ts), builds the
 * projections and services from the factories above (each resolves what it uses), and
 * assembles the application context (APP_CONTEXT) from the registered ports. Only this file
 * and src/roles/ (startRole, closeContainer's callers) know adapters or resolve tokens. Production adapters
 * connect here, so an unreachable server stops the start with a StartupError naming the
 * variable and the URL. The role (KB_ROLE) decides only how the runner waits
 * (subscribe/poll); what a process starts is decided in src/roles/.
 */
export async function buildContainer(config: Config, logger: Logger, options: BuildOptions = {}): Promise<{ di: DependencyContainer; ctx: AppContext }> {
  fs.mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const timeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const opened: Opened = [];
  try {
    return await assemble(config, logger, timeoutMs, opened, options.logOnly === true, options.rehearsal);
  } catch (err) {
    await releaseAll(opened);
    throw err;
  }
}

async function assemble(config: Config, logger: Logger, timeoutMs: number, opened: Opened, logOnly: boolean, rehearsal?: BuildOptions['rehearsal']): Promise<{ di: DependencyContainer; ctx: AppContext }> {
  const di = container.createChildContainer();
  di.register(CONFIG, { useValue: config });
  di.register(LOGGER, { useValue: logger });
  if (rehearsal) di.register(REHEARSAL, { useValue: true });
  const closers: (() => Promise<unknown>)[] = [];
  // Each container has its own metrics registry (several containers in one process never mix).
  di.register(METRICS, { useValue: prometheusMetrics() });
  const metrics = di.resolve<Metrics>(METRICS);

  // One MongoClient for the read store, GridFS blobs, data keys and rate limits.
  let mongoClient: MongoClient | undefined;
  if (config.readStore === 'mongodb') {
    const url = config.mongoUrl ?? '';
    const client = await connectOrFail('MongoDB', 'KB_MONGODB_URL', url, async () => {
      const c = new MongoClient(url, { serverSelectionTimeoutMS: timeoutMs, connectTimeoutMS: timeoutMs, appName: `kb-${config.role}` });
      opened.push(() => c.close());
      await c.connect();
      await c.db(config.mongoDb).command({ ping: 1 });
      return c;
    }, { timeoutMs: timeoutMs + 1000 });
    mongoClient = client;
    closers.push(() => client.close());
  }

  // Document text in events is sealed with a per-document key (erasure = destroying the key).
  const keyStore: KeyStore = mongoClient ? new MongoKeyStore({ client: mongoClient, dbName: config.mongoDb }) : new SqliteKeyStore(path.join(config.dataDir, 'keys.db'));
  opened.push(() => keyStore.close());
  // The embedded SQLite files' WAL checkpoints run on a thread of their own (KB_SQLITE_CHECKPOINTS),
  // closed after the stores (EXTRA_CLOSERS run after them; `opened` closes in reverse order).
  let checkpointer: WalCheckpointer | undefined;
  if (config.sqliteCheckpoints === 'thread' && (config.eventStore !== 'eventstoredb' || !mongoClient)) {
    const c = new WalCheckpointer((err) => logger.warn({ err }, 'WAL checkpoints: the thread gave a file back to its store'));
    checkpointer = c;
    opened.push(() => c.close());
    closers.push(() => c.close());
  }
  let storedEventStore: EventStore;
  if (config.eventStore === 'eventstoredb') {
    const url = config.eventStoreDbUrl ?? '';
    let esdb: EventStoreDbEventStore | undefined;
    storedEventStore = await connectOrFail('EventStoreDB', 'KB_EVENTSTOREDB_URL', url, async () => {
      esdb = new EventStoreDbEventStore({ connectionString: url, metrics });
      await esdb.headPosition(); // reads $all: proves the server answers
      return esdb;
    }, { timeoutMs, abandon: () => esdb?.close() });
  } else {
    storedEventStore = new SqliteEventStore(path.join(config.dataDir, 'events.db'), { synchronous: config.durability, metrics, checkpointer });
  }
  opened.push(() => storedEventStore.close());
  const encrypting = new EncryptingEventStore(storedEventStore, keyStore);
  const eventStore: EventStore = encrypting;

  let readStore: ReadStore;
  let blobStore: BlobStore;
  if (mongoClient) {
    const client = mongoClient;
    readStore = await connectOrFail('MongoDB', 'KB_MONGODB_URL', config.mongoUrl ?? '', () => new MongoReadStore({ client, dbName: config.mongoDb }).connect(), { timeoutMs });
    // The start-up sweep of interrupted uploads spares any younger than twice the longest upload.
    blobStore = new GridFsBlobStore({ client, dbName: config.mongoDb, minTempAgeMs: Math.max(60 * 60 * 1000, 2 * config.uploadTimeoutMs) });
  } else {
    readStore = new SqliteReadStore(path.join(config.dataDir, 'read.db'), { bulkWriter: config.readStoreBulkWriter, checkpointer });
    blobStore = new FsBlobStore(path.join(config.dataDir, 'blobs'));
  }
  opened.push(() => readStore.close());

  // The embedded index is opened first: `local` (the default) means GloVe-SIF for a new index,
  // and whichever local model built an existing one (data dirs from before the default changed
  // hold USE-lite's vectors), so an upgrade keeps working without re-embedding. Any other
  // choice that differs from the index's model starts a model change (src/processing/reembedder.ts).
  // By default in its own thread (KB_SEARCH_THREAD): ranking and index updates do not hold up the event loop.
  const embedded = config.searchIndex === 'elasticsearch' ? undefined : await openEmbeddedIndex(config, logger);
  if (embedded) opened.push(() => embedded.close());
  const indexModel = (await embedded?.vectorModels())?.active;
  const builtBy = config.embeddings === 'local' && indexModel ? LOCAL_EMBEDDERS.find((name) => localModelId(name) === indexModel.modelId) : undefined;
  if (builtBy && builtBy !== 'glove') logger.warn({ model: indexModel?.modelId }, `the search index was built with KB_EMBEDDINGS=${builtBy}: using it (set KB_EMBEDDINGS to choose)`);
  const log = (msg: string): void => logger.info(msg);
  const embeddings: EmbeddingProvider = rehearsal ? borrowed(rehearsal.embeddings) : createEmbeddingProvider(builtBy ? { ...config, embeddings: builtBy } : config, log);
  opened.push(() => embeddings.close());
  // A file that did not record its model (`unknown:<dims>d`, not a local model): vectors of the configured model's size are taken as its.
  if (embedded && indexModel?.modelId.startsWith('unknown:') && indexModel.dimensions === embeddings.dimensions) await embedded.nameLegacyModel(embeddings.modelId);
  const embeddingModels = new ConfiguredEmbeddingModels(embeddings, (modelId) => (rehearsal ? undefined : embeddingProviderForModel(config, modelId, log)));
  opened.push(() => embeddingModels.close());

  let searchIndex: SearchIndex;
  if (!embedded) {
    const url = config.elasticsearchUrl ?? '';
    const es = new ElasticsearchSearchIndex({ node: url, name: config.elasticsearchIndex, dimensions: embeddings.dimensions, model: embeddings.modelId, replicas: config.elasticsearchReplicas });
    await connectOrFail('Elasticsearch', 'KB_ELASTICSEARCH_URL', url, () => es.connect(), { timeoutMs, abandon: () => es.close() });
    searchIndex = es;
  } else {
    searchIndex = embedded;
  }
  // Loaded in the background from the start, so the first upload is as fast as the tenth; during a
  // model change searches and uploads use the index's model: it is loaded too.
  const active = (await searchIndex.vectorModels()).active;
  const activeModel = active && active.modelId !== embeddings.modelId ? embeddingModels.forModel(active.modelId) : undefined;
  if (active && active.modelId !== embeddings.modelId && !activeModel) {
    logger.warn({ model: active.modelId }, 'the search index holds vectors of a model this deployment cannot make: searches rank by BM25 alone until the change to KB_EMBEDDINGS completes');
  }
  const warmup = new Warmup(async () => {
    if (!logOnly) await Promise.all([embeddings.warmup?.(), activeModel?.warmup?.()]);
  }, logger);
  if (!embedded) opened.push(() => searchIndex.close());

  let jobQueue: JobQueue | undefined;
  let eventFeed: EventFeed | undefined;
  if (config.feed === 'kafka') {
    const url = config.kafkaBrokers.join(',');
    // The API role neither publishes nor dispatches nor consumes: it opens no Kafka client.
    if (config.role !== 'api') {
      const queue = new KafkaJobQueue({
        brokers: config.kafkaBrokers,
        clientId: `${config.kafkaClientId}-jobs`,
        handled: new ReadStoreHandledJobs(readStore),
        rebalanceTimeoutMs: config.kafkaRebalanceTimeoutMs,
        logger,
      });
      jobQueue = await connectOrFail('Kafka', 'KB_KAFKA_BROKERS', url, () => queue.connect(), { timeoutMs, abandon: () => queue.close() });
      opened.push(() => queue.close());
    }
    if (config.role === 'all' || config.role === 'projector') {
      const feed = new KafkaEventFeed({
        brokers: config.kafkaBrokers,
        clientId: `${config.kafkaClientId}-feed`,
        onError: (err, info) => logger.error({ err, ...info }, 'event feed send failed; the batch is retried'),
      });
      eventFeed = await connectOrFail('Kafka', 'KB_KAFKA_BROKERS', url, () => feed.connect(), { timeoutMs, abandon: () => feed.close() });
      opened.push(() => feed.close());
    }
  }

  const rateLimiter: RateLimiterFactory = mongoClient
    ? ((client) => (o) => createRateLimiter({ keyPrefix: o.keyPrefix, points: o.points, durationSeconds: o.durationSeconds }, client, { dbName: config.mongoDb }))(mongoClient)
    : memoryRateLimiter;

  di.register(STORED_EVENT_STORE, { useValue: storedEventStore });
  di.register(EVENT_STORE, { useValue: eventStore });
  // Through the event store: destroying a key also drops the plaintext it keeps in memory.
  di.register(KEY_STORE, { useValue: encrypting.keyStore });
  di.register(READ_STORE, { useValue: readStore });
  di.register(SEARCH_INDEX, { useValue: searchIndex });
  di.register(BLOB_STORE, { useValue: blobStore });
  di.register(EMBEDDINGS, { useValue: embeddings });
  // The embeddings factory already puts an LRU cache in front of the model: queries share it.
  di.register(QUERY_EMBEDDINGS, { useValue: embeddings });
  if (mongoClient) di.register(MONGO_CLIENT, { useValue: mongoClient });
  if (jobQueue) di.register(JOB_QUEUE, { useValue: jobQueue });
  if (eventFeed) di.register(EVENT_FEED, { useValue: eventFeed });
  if (config.searchIndex === 'embedded') {
    // The embedded index keeps a deleted document's words in FTS segments until a merge.
    const file = path.join(config.dataDir, 'search.db');
    di.register(COMPACT_SEARCH_INDEX, { useValue: () => void optimizeEmbeddedIndex(file) });
    // The index's own thread (KB_SEARCH_THREAD=worker): the start-up rehearsal warms its code up.
    if (embedded instanceof WorkerSearchIndex) di.register(WARM_SEARCH_THREAD, { useValue: (sample: WarmUpSample) => embedded.warmUp(sample) });
  }
  // Mail: SMTP when KB_SMTP_URL is set, else .eml files in the data dir's outbox.
  const m = config.mail;
  const mail: MailSender = m.smtpUrl
    ? smtpMailSender({ url: m.smtpUrl, from: m.from, tlsRejectUnauthorized: m.tlsRejectUnauthorized, requireTls: m.requireTls, timeoutMs: m.timeoutMs })
    : outboxMailSender(path.join(config.dataDir, 'outbox'), m.from);
  di.register(MAIL_SENDER, { useValue: mail });
  // The owners' "verify the log": the SQLite log carries the hash chain it re-walks.
  if (config.eventStore === 'sqlite') di.register(LOG_VERIFIER, { useValue: new SqliteLogVerifier(path.join(config.dataDir, 'events.db')) });
  // Single sign-on when KB_OIDC_ISSUER is set (discovery happens at the first sign-in).
  if (config.oidc) di.register(IDENTITY_PROVIDER, { useValue: openidClientProvider(config.oidc) });
  closers.push(() => mail.close());
  di.register(EXTRA_CLOSERS, { useValue: closers });

  const projections = projectionFactories.map((f) => f(di));
  // Embedded read store: every projection's batch commits in one read-store transaction (one
  // commit per batch, not one per projection). Not on MongoDB, whose transactions are bounded
  // in time and size (a rebuild's span of 20,000 events would overrun them).
  const batchTransaction = config.readStore === 'sqlite' ? <R>(fn: () => Promise<R>) => readStore.transaction(fn) : undefined;
  // A start far behind the log (a read model's layout changed) catches up as a rebuild does.
  const bulkLoad = batchTransaction ? <R>(fn: () => Promise<R>) => readStore.bulkLoad(fn) : undefined;
  const runner = new ProjectionRunner(eventStore, projections, logger, { mode: runsProjections(config.role) ? 'subscribe' : 'poll', batchTransaction, bulkLoad });
  // A revocation is refused in this process from the moment its command appended it, whatever
  // the projections' lag; forgotten once every projection applied it (src/security/revocations.ts).
  // Split deployments: only the process that ran the command knows it before the read models do.
  const revocations = new Revocations(() => runner.lowWatermark());
  observeAppends(eventStore, (events, position) => revocations.appended(events, position));
  runner.onApplied(() => revocations.prune());
  // The context the HTTP layer and the services receive: every port resolved by its token.
  const ctx: AppContext = {
    config: di.resolve<Config>(CONFIG),
    logger: di.resolve<Logger>(LOGGER),
    eventStore: di.resolve<EventStore>(EVENT_STORE),
    readStore: di.resolve<ReadStore>(READ_STORE),
    searchIndex: di.resolve<SearchIndex>(SEARCH_INDEX),
    blobStore: di.resolve<BlobStore>(BLOB_STORE),
    embeddings: di.resolve<EmbeddingProvider>(EMBEDDINGS),
    queryEmbeddings: di.resolve<EmbeddingProvider>(QUERY_EMBEDDINGS),
    embeddingModels,
    scratchReadStore: () => new SqliteReadStore(':memory:'),
    rateLimiter,
    ...(optional<IdentityProvider>(di, IDENTITY_PROVIDER) ? { identityProvider: optional<IdentityProvider>(di, IDENTITY_PROVIDER) } : {}),
    ...(optional<LogVerifier>(di, LOG_VERIFIER) ? { logVerifier: optional<LogVerifier>(di, LOG_VERIFIER) } : {}),
    metrics,
    jwtSecret: jwtSecret(config),
    now: () => new Date(),
    projections,
    runner,
    revocations,
    warmup,
    services: [],
  };
  ctx.services.push(...serviceFactories.map((f) => f(di, ctx)));
  di.register(APP_CONTEXT, { useValue: ctx });
  registerGauges(ctx);
  if (config.eventStore !== 'sqlite' || config.readStore !== 'sqlite' || config.searchIndex !== 'embedded' || config.feed !== 'none') {
    logger.info({ role: config.role, eventStore: config.eventStore, readStore: config.readStore, searchIndex: config.searchIndex, feed: config.feed, embeddings: config.embeddings }, 'adapters');
  }
  return { di, ctx };
}

/** Stops the services and the runner, then closes every port and connection the root opened. */
export async function closeContainer(di: DependencyContainer): Promise<void> {
  const ctx = di.resolve<AppContext>(APP_CONTEXT);
  for (const s of [...ctx.services].reverse()) await s.stop().catch(() => undefined);
  await ctx.runner.stop();
  await optional<JobQueue>(di, JOB_QUEUE)?.close().catch(() => undefined);
  await optional<EventFeed>(di, EVENT_FEED)?.close().catch(() => undefined);
  await ctx.embeddings.close().catch(() => undefined);
  await ctx.embeddingModels.close().catch(() => undefined);
  await ctx.searchIndex.close().catch(() => undefined);
  await ctx.eventStore.close();
  await ctx.readStore.close();
  for (const close of di.resolve<(() => Promise<unknown>)[]>(EXTRA_CLOSERS)) await close().catch(() => undefined);
}
