import * as t from 'io-ts';
import { isLeft } from 'fp-ts/Either';
import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { BooleanFromString, IntFromString } from '../util/stringCodecs';

/** A positive whole number (limits, time-outs in milliseconds). */
const PositiveInt = t.refinement(IntFromString, (n) => n > 0, 'PositiveInt');
/** A whole number within bounds, named by them in the start-up error. */
const IntIn = (min: number, max: number, what: string) => t.refinement(IntFromString, (n) => n >= min && n <= max, `${what} ${min}..${max}`);

const Env = t.partial({
  PORT: IntFromString,
  HOST: t.string,
  KB_DATA_DIR: t.string,
  KB_BASE_URL: t.string,
  KB_APP_URL: t.string,
  KB_JWT_SECRET: t.string,
  KB_ACCESS_TOKEN_TTL: IntFromString,
  KB_REFRESH_TOKEN_TTL: IntFromString,
  KB_ALLOW_REGISTRATION: BooleanFromString,
  KB_MAX_UPLOAD_BYTES: IntFromString,
  KB_RATE_LIMITS: t.keyof({ on: null, off: null }),
  KB_LOG_LEVEL: t.keyof({ fatal: null, error: null, warn: null, info: null, debug: null, trace: null, silent: null }),
  KB_DURABILITY: t.keyof({ full: null, normal: null }),
  KB_ROLE: t.keyof({ all: null, api: null, projector: null, worker: null }),
  KB_EVENT_STORE: t.keyof({ sqlite: null, eventstoredb: null }),
  KB_READ_STORE: t.keyof({ sqlite: null, mongodb: null }),
  KB_SEARCH_INDEX: t.keyof({ embedded: null, elasticsearch: null }),
  KB_SEARCH_THREAD: t.keyof({ worker: null, main: null }),
  KB_READ_STORE_BULK_WRITER: t.keyof({ thread: null, inline: null }),
  KB_SQLITE_CHECKPOINTS: t.keyof({ thread: null, inline: null }),
  KB_DENSE_INDEX: t.keyof({ approximate: null, exact: null }),
  // The approximate dense index (src/adapters/embedded/ivfIndex.ts, AnnSettings).
  KB_DENSE_INDEX_MIN_CHUNKS: IntIn(1000, 1_000_000_000, 'chunks'),
  KB_DENSE_INDEX_PROBE_LISTS: IntIn(1, 100_000, 'lists'),
  KB_DENSE_INDEX_MIN_PROBE: IntIn(1, 100_000_000, 'chunks'),
  KB_FEED: t.keyof({ none: null, kafka: null }),
  KB_EMBEDDINGS: t.keyof({ local: null, use: null, glove: null, 'use+glove': null, openai: null }),
  KB_MODEL_CACHE_DIR: t.string,
  KB_EMBEDDING_THREADS: IntFromString,
  KB_EMBEDDING_INGEST_THREAD: t.keyof({ worker: null, main: null }),
  KB_CHUNK_TOKENS: IntFromString,
  KB_CHUNK_OVERLAP: IntFromString,
  KB_OPENAI_API_KEY: t.string,
  KB_OPENAI_BASE_URL: t.string,
  KB_OPENAI_MODEL: t.string,
  KB_OPENAI_DIMENSIONS: IntFromString,
  KB_EVENTSTOREDB_URL: t.string,
  KB_MONGODB_URL: t.string,
  KB_MONGODB_DB: t.string,
  KB_ELASTICSEARCH_URL: t.string,
  KB_ELASTICSEARCH_INDEX: t.string,
  KB_ELASTICSEARCH_REPLICAS: IntFromString,
  KB_KAFKA_BROKERS: t.string,
  KB_KAFKA_CLIENT_ID: t.string,
  KB_KAFKA_REBALANCE_TIMEOUT_MS: PositiveInt,
  KB_READ_YOUR_WRITES_MS: IntFromString,
  KB_LINK_ID_SEARCH: t.keyof({ on: null, off: null }),
  KB_TRUST_PROXY: t.string,
  KB_WARMUP_REHEARSAL: t.keyof({ on: null, off: null }),
  KB_UNKNOWN_TOKEN_PER_MINUTE: IntFromString,
  // Slow clients and upload abuse (issue 11).
  KB_HEADERS_TIMEOUT_MS: PositiveInt,
  KB_SEARCH_EVENT_BACKLOG: PositiveInt,
  KB_ANALYTICS_MAX_ROWS: PositiveInt,
  KB_BODY_TIMEOUT_MS: PositiveInt,
  KB_WHOLE_DOCUMENT_READS_AT_ONCE: PositiveInt,
  KB_SEARCHES_AT_ONCE: PositiveInt,
  KB_SEARCHES_WAITING_PER_WORKSPACE: PositiveInt,
  KB_WHOLE_DOCUMENT_STALL_MS: PositiveInt,
  KB_WHOLE_DOCUMENT_MIN_BYTES_PER_S: PositiveInt,
  KB_UPLOAD_TIMEOUT_MS: PositiveInt,
  KB_KEEP_ALIVE_TIMEOUT_MS: PositiveInt,
  KB_UPLOAD_RATE_PER_MINUTE: PositiveInt,
  KB_WRITE_RATE_PER_MINUTE: PositiveInt,
  KB_MAX_EXTRACTED_BYTES: PositiveInt,
  KB_MAX_ZIP_ENTRIES: PositiveInt,
  KB_MAX_PDF_PAGES: PositiveInt,
  KB_MAX_CHUNKS_PER_DOCUMENT: PositiveInt,
  KB_EXTRACT_TIMEOUT_MS: PositiveInt,
  KB_PROCESSING_CONCURRENCY: PositiveInt,
  KB_PROCESSING_PER_WORKSPACE: PositiveInt,
  // Re-embedding after a model change (issue 13).
  KB_REEMBED_PAUSE_MS: t.refinement(IntFromString, (n) => n >= 0 && n <= 60_000, 'milliseconds 0..60000'),
  // Operations (issue 15): /metrics behind a bearer token, optionally on its own port.
  KB_METRICS_TOKEN: t.refinement(t.string, (s) => s.length >= 16, 'at least 16 characters'),
  KB_MCP_FETCH_MAX_CHARS: PositiveInt,
  KB_METRICS_PORT: t.refinement(IntFromString, (n) => n >= 0 && n <= 65535, 'a port 0..65535'),
  KB_REPROCESS_PER_MINUTE: PositiveInt,
  // Identity: mail, e-mailed links, second factor (issue 16).
  KB_SMTP_URL: t.string,
  KB_MAIL_FROM: t.string,
  KB_SMTP_TLS_REJECT_UNAUTHORIZED: BooleanFromString,
  KB_SMTP_REQUIRE_TLS: BooleanFromString,
  KB_SMTP_TIMEOUT_MS: PositiveInt,
  KB_MAIL_LOG_LINKS: BooleanFromString,
  KB_EMAIL_VERIFICATION_TTL: PositiveInt,
  KB_PASSWORD_RESET_TTL: PositiveInt,
  KB_RESEND_VERIFICATION_PER_HOUR: PositiveInt,
  KB_FORGOT_PASSWORD_PER_IP_PER_HOUR: PositiveInt,
  KB_FORGOT_PASSWORD_PER_EMAIL_PER_HOUR: PositiveInt,
  KB_FORGOT_PASSWORD_JITTER_MS: t.refinement(IntFromString, (n) => n >= 0 && n <= 60_000, 'milliseconds 0..60000'),
  KB_MFA_CHALLENGE_TTL: PositiveInt,
  KB_MFA_ATTEMPTS_PER_CHALLENGE: PositiveInt,
  KB_MFA_FAILURES_PER_ACCOUNT_PER_HOUR: PositiveInt,
  KB_MFA_ENROL_SIGNIN_AGE: PositiveInt,
  KB_OIDC_ISSUER: t.string,
  KB_OIDC_CLIENT_ID: t.string,
  KB_OIDC_CLIENT_SECRET: t.string,
  KB_OIDC_ALLOWED_DOMAINS: t.string,
  KB_OIDC_REDIRECT_URI: t.string,
  KB_OIDC_TIMEOUT_MS: PositiveInt,
});

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  baseUrl: string;
  appUrl: string;
  jwtSecret?: string;
  accessTokenTtl: number;
  refreshTokenTtl: number;
  allowRegistration: boolean;
  maxUploadBytes: number;
  rateLimits: boolean;
  logLevel: string;
  durability: 'full' | 'normal';
  role: 'all' | 'api' | 'projector' | 'worker';
  eventStore: 'sqlite' | 'eventstoredb';
  readStore: 'sqlite' | 'mongodb';
  searchIndex: 'embedded' | 'elasticsearch';
  /**
   * SQLite read store: where a rebuild (or a catch-up in spans) commits its spans: `thread` (a
   * thread with its own connection, while the next span is projected; default) or `inline`.
   */
  readStoreBulkWriter: 'thread' | 'inline';
  /** Who runs the embedded SQLite files' WAL checkpoints: a thread of their own, or each writing connection (SQLite's default). */
  sqliteCheckpoints: 'thread' | 'inline';
  /** Where the embedded index runs: `worker` (its own thread; default) or `main` (the event loop's thread). */
  searchThread: 'worker' | 'main';
  /** Dense kNN of the embedded index: `approximate` (an inverted file for scopes of 20,000+ chunks; default) or `exact` (always a full scan). */
  denseIndex: 'approximate' | 'exact';
  /**
   * The approximate dense index's settings (used with `denseIndex: approximate`): it is built
   * once the index holds `minChunks` chunks and used by searches whose scope holds at least as
   * many; a search scans `probeLists` lists' worth of its scope's chunks, at least `minProbe`.
   * Unset: the index's defaults (`DEFAULT_ANN`: 20,000, 64, 4,096).
   */
  denseAnn: { minChunks?: number; probeLists?: number; minProbe?: number };
  feed: 'none' | 'kafka';
  embeddings: 'local' | 'use' | 'glove' | 'use+glove' | 'openai';
  /** Where converted local model files are cached (default `<repo>/.cache/models`, then `KB_DATA_DIR/models`). */
  modelCacheDir?: string;
  embeddingThreads: number;
  /** GloVe-SIF: documents' chunks embedded on a thread of their own (`worker`, default) or on the event loop's (`main`); queries always on the event loop's. */
  embeddingIngestThread: boolean;
  chunkTokens: number;
  chunkOverlap: number;
  openai: { apiKey?: string; baseUrl?: string; model: string; dimensions?: number };
  eventStoreDbUrl?: string;
  mongoUrl?: string;
  mongoDb: string;
  elasticsearchUrl?: string;
  elasticsearchIndex: string;
  /** Replicas of each Elasticsearch index (0 for a single node). */
  elasticsearchReplicas: number;
  kafkaBrokers: string[];
  kafkaClientId: string;
  /** How long a Kafka rebalance waits for a worker's running job; above the longest job (extraction + embedding). */
  kafkaRebalanceTimeoutMs: number;
  readYourWritesMs: number;
  /** SearchPerformed events being written at once; past it a search is answered without its event (counted in a warning). */
  searchEventBacklog: number;
  /** Rows (searches, processing runs, documents) one analytics request may read; more: 400 ANALYTICS_RANGE_TOO_LARGE. */
  analyticsMaxRows: number;
  /** GET /s/<linkId> searches like the token (decisions.md); off: only the token opens a link. */
  linkIdSearch: boolean;
  /**
   * Express's `trust proxy`: which proxies' X-Forwarded-For give the client address that per-address
   * limits count (false: the connection's address, the default).
   */
  trustProxy: boolean | number | string;
  /** At start-up, before /readyz says ready, one upload to VERIFIED and a search in a throwaway container (src/roles/rehearsal.ts; embedded default only). */
  warmupRehearsal: boolean;
  /** Failed look-ups of a public token or link id allowed per client IP per minute (all public channels together). */
  unknownTokenPerMinute: number;
  /** Request headers must arrive within this (slow-header clients are cut off). */
  headersTimeoutMs: number;
  /** A request body (JSON routes) must arrive within this after the headers: 408 REQUEST_TIMEOUT. */
  bodyTimeoutMs: number;
  /** Answers holding a whole document's text or folded history (its text, content, metadata or set as of a time) built and sent at once; the others wait their turn. */
  wholeDocumentReadsAtOnce: number;
  /** Searches run at once; one workspace holds at most half (src/search/searchTurns.ts). */
  searchesAtOnce: number;
  /** Searches of one workspace that may wait for a turn; past it they are refused (503). */
  searchesWaitingPerWorkspace: number;
  /** A client that takes none of such an answer for this long has its connection closed (the answer dropped, the turn freed). */
  wholeDocumentStallMs: number;
  /**
   * Such an answer (and a `/file` download) must average at least this many bytes per second
   * once `wholeDocumentStallMs` has passed since it began; slower, its connection is closed.
   */
  wholeDocumentMinBytesPerS: number;
  /** The body of an upload must arrive within this after the headers: 408 REQUEST_TIMEOUT. */
  uploadTimeoutMs: number;
  /** An idle keep-alive connection is kept this long (longer than a load balancer's idle time-out). */
  keepAliveTimeoutMs: number;
  /** Uploads per user per minute: 429 RATE_LIMITED past it (with rate limits on). */
  uploadRatePerMinute: number;
  /** Writes (POST/PUT/PATCH/DELETE on /v1 and /api) per credential per minute: 429 RATE_LIMITED past it. */
  writeRatePerMinute: number;
  /** Bounds of one document's extraction (see ExtractionLimits). */
  extraction: { maxExtractedBytes: number; maxZipEntries: number; maxPdfPages: number; maxChunks: number; timeoutMs: number };
  /**
   * Document processing runs at once in this process (`concurrency`), and at most
   * `perWorkspace` of them for one workspace; waiting runs are taken round-robin by workspace.
   */
  processing: { concurrency: number; perWorkspace: number };
  /** Pause between two re-embedding batches after a model change (0: only a yield to the event loop). */
  reembedPauseMs: number;
  /** Reprocess requests per workspace per minute. */
  reprocessPerMinute: number;
  /**
   * Outgoing mail: SMTP when `smtpUrl` is set, else `.eml` files in `<dataDir>/outbox/`.
   * `logLinks`: log each mailed link (without its token) at info level (development).
   */
  mail: { smtpUrl?: string; from: string; tlsRejectUnauthorized: boolean; requireTls: boolean; timeoutMs: number; logLinks: boolean };
  /** Lifetimes (seconds) and rate limits of the e-mailed flows and the second factor. */
  identity: {
    verificationTtl: number;
    resetTtl: number;
    resendVerificationPerHour: number;
    forgotPasswordPerIpPerHour: number;
    forgotPasswordPerEmailPerHour: number;
    /** Milliseconds: a reset request's work starts after a random pause up to this (whether or not the address has an account). */
    forgotPasswordJitterMs: number;
    mfaChallengeTtl: number;
    mfaAttemptsPerChallenge: number;
    /** Wrong second-factor codes per account per hour, over every challenge and route (then 429). */
    mfaFailuresPerAccountPerHour: number;
    /** Seconds: starting TOTP enrolment needs a session signed in at most this long ago. */
    mfaEnrolSigninAge: number;
  };
  /** OpenID Connect single sign-on; absent when KB_OIDC_ISSUER is unset. `allowedDomains` empty: any. */
  oidc?: { issuer: string; clientId: string; clientSecret: string; allowedDomains: string[]; redirectUri: string; timeoutMs: number };
  /**
   * /metrics: `tokenSha256` (hex) of KB_METRICS_TOKEN, when set (the token itself is not kept);
   * `port`: serve /metrics only on this separate listener (KB_METRICS_PORT).
   */
  metrics: { tokenSha256?: string; port?: number };
  /** The `fetch` tool (chatgpt profile) answers at most this many characters of a document's text. */
  mcpFetchMaxChars: number;
}

/**
 * Default processing slots: two per core, at least 4 (so one workspace's long document never
 * holds the only slot, and runs waiting on fsync overlap) and at most 8 (each extraction
 * worker may take its heap limit).
 */
export function defaultProcessingConcurrency(cores: number = os.availableParallelism()): number {
  // With the GloVe embedder a run mostly waits on fsyncs (its appends): more runs at once share group commits.
  return Math.min(8, Math.max(4, 2 * cores));
}

export class ConfigError extends Error {}

/** Decode and validate the environment; throws ConfigError with every problem named. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const raw: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '' && (k.startsWith('KB_') || k === 'PORT' || k === 'HOST')) raw[k] = v;
  const decoded = Env.decode(raw);
  if (isLeft(decoded)) {
    const problems = decoded.left.map((e) => {
      const key = e.context.map((c) => c.key).filter(Boolean).join('.');
      // Secrets are never echoed, even when invalid.
      const shown = /TOKEN|SECRET|KEY|PASSWORD/.test(key) ? '(hidden)' : JSON.stringify(raw[key] ?? '');
      return `${key}=${shown} is not valid (${e.message ?? `expected ${e.context[e.context.length - 1]?.type.name}`})`;
    });
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  const e = decoded.right;
  const port = e.PORT ?? 3000;
  const host = e.HOST ?? '127.0.0.1';
  const baseUrl = (e.KB_BASE_URL ?? `http://${host}:${port}`).replace(/\/+$/, '');
  const config: Config = {
    port,
    host,
    dataDir: path.resolve(e.KB_DATA_DIR ?? './data'),
    baseUrl,
    appUrl: (e.KB_APP_URL ?? baseUrl).replace(/\/+$/, ''),
    jwtSecret: e.KB_JWT_SECRET,
    accessTokenTtl: e.KB_ACCESS_TOKEN_TTL ?? 900,
    refreshTokenTtl: e.KB_REFRESH_TOKEN_TTL ?? 7 * 24 * 3600,
    allowRegistration: e.KB_ALLOW_REGISTRATION ?? true,
    maxUploadBytes: e.KB_MAX_UPLOAD_BYTES ?? 50 * 1024 * 1024,
    rateLimits: (e.KB_RATE_LIMITS ?? 'on') === 'on',
    logLevel: e.KB_LOG_LEVEL ?? 'info',
    durability: e.KB_DURABILITY ?? 'full',
    role: e.KB_ROLE ?? 'all',
    eventStore: e.KB_EVENT_STORE ?? 'sqlite',
    readStore: e.KB_READ_STORE ?? 'sqlite',
    searchIndex: e.KB_SEARCH_INDEX ?? 'embedded',
    searchThread: e.KB_SEARCH_THREAD ?? 'worker',
    readStoreBulkWriter: e.KB_READ_STORE_BULK_WRITER ?? 'thread',
    sqliteCheckpoints: e.KB_SQLITE_CHECKPOINTS ?? 'thread',
    denseIndex: e.KB_DENSE_INDEX ?? 'approximate',
    denseAnn: {
      ...(e.KB_DENSE_INDEX_MIN_CHUNKS !== undefined ? { minChunks: e.KB_DENSE_INDEX_MIN_CHUNKS } : {}),
      ...(e.KB_DENSE_INDEX_PROBE_LISTS !== undefined ? { probeLists: e.KB_DENSE_INDEX_PROBE_LISTS } : {}),
      ...(e.KB_DENSE_INDEX_MIN_PROBE !== undefined ? { minProbe: e.KB_DENSE_INDEX_MIN_PROBE } : {}),
    },
    feed: e.KB_FEED ?? 'none',
    embeddings: e.KB_EMBEDDINGS ?? 'local',
    modelCacheDir: e.KB_MODEL_CACHE_DIR,
    embeddingThreads: e.KB_EMBEDDING_THREADS ?? 1,
    embeddingIngestThread: (e.KB_EMBEDDING_INGEST_THREAD ?? 'worker') === 'worker',
    chunkTokens: e.KB_CHUNK_TOKENS ?? 200,
    chunkOverlap: e.KB_CHUNK_OVERLAP ?? 40,
    openai: { apiKey: e.KB_OPENAI_API_KEY, baseUrl: e.KB_OPENAI_BASE_URL, model: e.KB_OPENAI_MODEL ?? 'text-embedding-3-small', dimensions: e.KB_OPENAI_DIMENSIONS },
    eventStoreDbUrl: e.KB_EVENTSTOREDB_URL,
    mongoUrl: e.KB_MONGODB_URL,
    mongoDb: e.KB_MONGODB_DB ?? 'kb',
    elasticsearchUrl: e.KB_ELASTICSEARCH_URL,
    elasticsearchIndex: e.KB_ELASTICSEARCH_INDEX ?? 'kb-chunks',
    elasticsearchReplicas: e.KB_ELASTICSEARCH_REPLICAS ?? 0,
    kafkaBrokers: (e.KB_KAFKA_BROKERS ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    kafkaClientId: e.KB_KAFKA_CLIENT_ID ?? 'kb-service',
    kafkaRebalanceTimeoutMs: e.KB_KAFKA_REBALANCE_TIMEOUT_MS ?? 15 * 60_000,
    readYourWritesMs: e.KB_READ_YOUR_WRITES_MS ?? 5000,
    searchEventBacklog: e.KB_SEARCH_EVENT_BACKLOG ?? 1000,
    analyticsMaxRows: e.KB_ANALYTICS_MAX_ROWS ?? 200000,
    linkIdSearch: (e.KB_LINK_ID_SEARCH ?? 'on') === 'on',
    trustProxy: trustProxyOf(e.KB_TRUST_PROXY),
    warmupRehearsal: (e.KB_WARMUP_REHEARSAL ?? 'on') === 'on',
    unknownTokenPerMinute: e.KB_UNKNOWN_TOKEN_PER_MINUTE ?? 20,
    headersTimeoutMs: e.KB_HEADERS_TIMEOUT_MS ?? 20_000,
    bodyTimeoutMs: e.KB_BODY_TIMEOUT_MS ?? 30_000,
    wholeDocumentReadsAtOnce: e.KB_WHOLE_DOCUMENT_READS_AT_ONCE ?? 2,
    searchesAtOnce: e.KB_SEARCHES_AT_ONCE ?? 4,
    searchesWaitingPerWorkspace: e.KB_SEARCHES_WAITING_PER_WORKSPACE ?? 128,
    wholeDocumentStallMs: e.KB_WHOLE_DOCUMENT_STALL_MS ?? 10_000,
    wholeDocumentMinBytesPerS: e.KB_WHOLE_DOCUMENT_MIN_BYTES_PER_S ?? 64 * 1024,
    uploadTimeoutMs: e.KB_UPLOAD_TIMEOUT_MS ?? 10 * 60_000,
    // AWS ALB's idle time-out is 60 s: the server must not close a connection the balancer is about to reuse.
    keepAliveTimeoutMs: e.KB_KEEP_ALIVE_TIMEOUT_MS ?? 65_000,
    uploadRatePerMinute: e.KB_UPLOAD_RATE_PER_MINUTE ?? 60,
    writeRatePerMinute: e.KB_WRITE_RATE_PER_MINUTE ?? 600,
    extraction: {
      maxExtractedBytes: e.KB_MAX_EXTRACTED_BYTES ?? 64 * 1024 * 1024,
      maxZipEntries: e.KB_MAX_ZIP_ENTRIES ?? 5000,
      maxPdfPages: e.KB_MAX_PDF_PAGES ?? 5000,
      maxChunks: e.KB_MAX_CHUNKS_PER_DOCUMENT ?? 200_000,
      timeoutMs: e.KB_EXTRACT_TIMEOUT_MS ?? 120_000,
    },
    processing: { concurrency: 0, perWorkspace: 0 },
    reembedPauseMs: e.KB_REEMBED_PAUSE_MS ?? 0,
    reprocessPerMinute: e.KB_REPROCESS_PER_MINUTE ?? 10,
    mail: {
      smtpUrl: e.KB_SMTP_URL,
      from: e.KB_MAIL_FROM ?? 'Knowledge Base <no-reply@localhost>',
      tlsRejectUnauthorized: e.KB_SMTP_TLS_REJECT_UNAUTHORIZED ?? true,
      requireTls: e.KB_SMTP_REQUIRE_TLS ?? false,
      timeoutMs: e.KB_SMTP_TIMEOUT_MS ?? 10_000,
      logLinks: e.KB_MAIL_LOG_LINKS ?? env.NODE_ENV !== 'production',
    },
    identity: {
      verificationTtl: e.KB_EMAIL_VERIFICATION_TTL ?? 24 * 3600,
      resetTtl: e.KB_PASSWORD_RESET_TTL ?? 30 * 60,
      resendVerificationPerHour: e.KB_RESEND_VERIFICATION_PER_HOUR ?? 3,
      forgotPasswordPerIpPerHour: e.KB_FORGOT_PASSWORD_PER_IP_PER_HOUR ?? 20,
      forgotPasswordPerEmailPerHour: e.KB_FORGOT_PASSWORD_PER_EMAIL_PER_HOUR ?? 3,
      forgotPasswordJitterMs: e.KB_FORGOT_PASSWORD_JITTER_MS ?? 2000,
      mfaChallengeTtl: e.KB_MFA_CHALLENGE_TTL ?? 300,
      mfaAttemptsPerChallenge: e.KB_MFA_ATTEMPTS_PER_CHALLENGE ?? 5,
      mfaFailuresPerAccountPerHour: e.KB_MFA_FAILURES_PER_ACCOUNT_PER_HOUR ?? 20,
      mfaEnrolSigninAge: e.KB_MFA_ENROL_SIGNIN_AGE ?? 900,
    },
    oidc: e.KB_OIDC_ISSUER
      ? {
          issuer: e.KB_OIDC_ISSUER,
          clientId: e.KB_OIDC_CLIENT_ID ?? '',
          clientSecret: e.KB_OIDC_CLIENT_SECRET ?? '',
          allowedDomains: (e.KB_OIDC_ALLOWED_DOMAINS ?? '').split(',').map((x) => x.trim().toLowerCase()).filter(Boolean),
          redirectUri: e.KB_OIDC_REDIRECT_URI ?? `${baseUrl}/v1/auth/oidc/callback`,
          timeoutMs: e.KB_OIDC_TIMEOUT_MS ?? 10_000,
        }
      : undefined,
    metrics: {
      tokenSha256: e.KB_METRICS_TOKEN === undefined ? undefined : createHash('sha256').update(e.KB_METRICS_TOKEN, 'utf8').digest('hex'),
      port: e.KB_METRICS_PORT,
    },
    mcpFetchMaxChars: e.KB_MCP_FETCH_MAX_CHARS ?? 200_000,
  };
  const concurrency = e.KB_PROCESSING_CONCURRENCY ?? defaultProcessingConcurrency();
  // By default one slot always stays free for the other workspaces.
  config.processing = { concurrency, perWorkspace: Math.min(concurrency, e.KB_PROCESSING_PER_WORKSPACE ?? Math.max(1, concurrency - 1)) };
  const missing: string[] = [];
  if (config.eventStore === 'eventstoredb' && !config.eventStoreDbUrl) missing.push('KB_EVENTSTOREDB_URL (KB_EVENT_STORE=eventstoredb)');
  if (config.readStore === 'mongodb' && !config.mongoUrl) missing.push('KB_MONGODB_URL (KB_READ_STORE=mongodb)');
  if (config.searchIndex === 'elasticsearch' && !config.elasticsearchUrl) missing.push('KB_ELASTICSEARCH_URL (KB_SEARCH_INDEX=elasticsearch)');
  if (config.feed === 'kafka' && config.kafkaBrokers.length === 0) missing.push('KB_KAFKA_BROKERS (KB_FEED=kafka)');
  if (config.embeddings === 'openai' && !config.openai.apiKey && !config.openai.baseUrl) missing.push('KB_OPENAI_API_KEY or KB_OPENAI_BASE_URL (KB_EMBEDDINGS=openai)');
  if (config.unknownTokenPerMinute < 1) missing.push('KB_UNKNOWN_TOKEN_PER_MINUTE must be at least 1');
  if (config.feed === 'kafka' && config.kafkaRebalanceTimeoutMs <= config.extraction.timeoutMs) missing.push('KB_KAFKA_REBALANCE_TIMEOUT_MS must be above KB_EXTRACT_TIMEOUT_MS (a job extracts, then embeds)');
  if (config.elasticsearchReplicas < 0) missing.push('KB_ELASTICSEARCH_REPLICAS must be 0 or more');
  if (config.mail.smtpUrl !== undefined && !/^smtps?:\/\//.test(config.mail.smtpUrl)) missing.push('KB_SMTP_URL must start with smtp:// or smtps://');
  if (config.oidc && (!config.oidc.clientId || !config.oidc.clientSecret)) missing.push('KB_OIDC_CLIENT_ID and KB_OIDC_CLIENT_SECRET (KB_OIDC_ISSUER is set)');
  if (config.chunkOverlap >= config.chunkTokens) missing.push('KB_CHUNK_OVERLAP must be smaller than KB_CHUNK_TOKENS');
  if (missing.length) throw new ConfigError(`Invalid configuration, missing or inconsistent:\n  ${missing.join('\n  ')}`);
  return config;
}

/**
 * KB_TRUST_PROXY: `off` (default) trusts no proxy; a whole number trusts that many hops; anything
 * else is Express's list of trusted addresses (`loopback`, `10.0.0.0/8, uniquelocal`, ...).
 */
export function trustProxyOf(value: string | undefined): boolean | number | string {
  const v = (value ?? 'off').trim();
  if (v === '' || v === 'off' || v === 'false') return false;
  if (/^\d+$/.test(v)) return Number(v);
  return v;
}
