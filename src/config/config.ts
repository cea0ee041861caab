import * as t from 'io-ts';
import { isLeft } from 'fp-ts/Either';
import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { BooleanFromString, IntFromString } from '../util/stringCodecs';

/** A positive whole number (limits, time-outs in milliseconds). */
const PositiveInt = t.refinement(IntFromString, (n) => n > 0, 'PositiveInt');

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
  KB_FEED: t.keyof({ none: null, kafka: null }),
  KB_EMBEDDINGS: t.keyof({ local: null, openai: null }),
  KB_EMBEDDING_THREADS: IntFromString,
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
  KB_KAFKA_BROKERS: t.string,
  KB_KAFKA_CLIENT_ID: t.string,
  KB_READ_YOUR_WRITES_MS: IntFromString,
  KB_LINK_ID_SEARCH: t.keyof({ on: null, off: null }),
  KB_UNKNOWN_TOKEN_PER_MINUTE: IntFromString,
  // Slow clients and upload abuse (issue 11).
  KB_HEADERS_TIMEOUT_MS: PositiveInt,
  KB_BODY_TIMEOUT_MS: PositiveInt,
  KB_UPLOAD_TIMEOUT_MS: PositiveInt,
  KB_KEEP_ALIVE_TIMEOUT_MS: PositiveInt,
  KB_UPLOAD_RATE_PER_MINUTE: PositiveInt,
  KB_MAX_EXTRACTED_BYTES: PositiveInt,
  KB_MAX_ZIP_ENTRIES: PositiveInt,
  KB_MAX_PDF_PAGES: PositiveInt,
  KB_EXTRACT_TIMEOUT_MS: PositiveInt,
  KB_PROCESSING_CONCURRENCY: PositiveInt,
  KB_PROCESSING_PER_WORKSPACE: PositiveInt,
  // Operations (issue 15): /metrics behind a bearer token, optionally on its own port.
  KB_METRICS_TOKEN: t.refinement(t.string, (s) => s.length >= 16, 'at least 16 characters'),
  KB_MCP_FETCH_MAX_CHARS: PositiveInt,
  KB_METRICS_PORT: t.refinement(IntFromString, (n) => n >= 0 && n <= 65535, 'a port 0..65535'),
  KB_REPROCESS_PER_MINUTE: PositiveInt,
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
  feed: 'none' | 'kafka';
  embeddings: 'local' | 'openai';
  embeddingThreads: number;
  chunkTokens: number;
  chunkOverlap: number;
  openai: { apiKey?: string; baseUrl?: string; model: string; dimensions?: number };
  eventStoreDbUrl?: string;
  mongoUrl?: string;
  mongoDb: string;
  elasticsearchUrl?: string;
  elasticsearchIndex: string;
  kafkaBrokers: string[];
  kafkaClientId: string;
  readYourWritesMs: number;
  /** GET /s/<linkId> searches like the token (decisions.md); off: only the token opens a link. */
  linkIdSearch: boolean;
  /** Failed look-ups of a public token or link id allowed per client IP per minute (all public channels together). */
  unknownTokenPerMinute: number;
  /** Request headers must arrive within this (slow-header clients are cut off). */
  headersTimeoutMs: number;
  /** A request body (JSON routes) must arrive within this after the headers: 408 REQUEST_TIMEOUT. */
  bodyTimeoutMs: number;
  /** The body of an upload must arrive within this after the headers: 408 REQUEST_TIMEOUT. */
  uploadTimeoutMs: number;
  /** An idle keep-alive connection is kept this long (longer than a load balancer's idle time-out). */
  keepAliveTimeoutMs: number;
  /** Uploads per user per minute: 429 RATE_LIMITED past it (with rate limits on). */
  uploadRatePerMinute: number;
  /** Bounds of one document's extraction (see ExtractionLimits). */
  extraction: { maxExtractedBytes: number; maxZipEntries: number; maxPdfPages: number; timeoutMs: number };
  /**
   * Document processing runs at once in this process (`concurrency`), and at most
   * `perWorkspace` of them for one workspace; waiting runs are taken round-robin by workspace.
   */
  processing: { concurrency: number; perWorkspace: number };
  /** Reprocess requests per workspace per minute. */
  reprocessPerMinute: number;
  /**
   * /metrics: `tokenSha256` (hex) of KB_METRICS_TOKEN, when set (the token itself is not kept);
   * `port`: serve /metrics only on this separate listener (KB_METRICS_PORT).
   */
  metrics: { tokenSha256?: string; port?: number };
  /** The `fetch` tool (chatgpt profile) answers at most this many characters of a document's text. */
  mcpFetchMaxChars: number;
}

/**
 * Default processing slots: one per core, at least 2 (so one workspace's long document never
 * holds the only slot) and at most 4 (each extraction worker may take its heap limit).
 */
export function defaultProcessingConcurrency(cores: number = os.availableParallelism()): number {
  return Math.min(4, Math.max(2, cores));
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
    feed: e.KB_FEED ?? 'none',
    embeddings: e.KB_EMBEDDINGS ?? 'local',
    embeddingThreads: e.KB_EMBEDDING_THREADS ?? 1,
    chunkTokens: e.KB_CHUNK_TOKENS ?? 200,
    chunkOverlap: e.KB_CHUNK_OVERLAP ?? 40,
    openai: { apiKey: e.KB_OPENAI_API_KEY, baseUrl: e.KB_OPENAI_BASE_URL, model: e.KB_OPENAI_MODEL ?? 'text-embedding-3-small', dimensions: e.KB_OPENAI_DIMENSIONS },
    eventStoreDbUrl: e.KB_EVENTSTOREDB_URL,
    mongoUrl: e.KB_MONGODB_URL,
    mongoDb: e.KB_MONGODB_DB ?? 'kb',
    elasticsearchUrl: e.KB_ELASTICSEARCH_URL,
    elasticsearchIndex: e.KB_ELASTICSEARCH_INDEX ?? 'kb-chunks',
    kafkaBrokers: (e.KB_KAFKA_BROKERS ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    kafkaClientId: e.KB_KAFKA_CLIENT_ID ?? 'kb-service',
    readYourWritesMs: e.KB_READ_YOUR_WRITES_MS ?? 5000,
    linkIdSearch: (e.KB_LINK_ID_SEARCH ?? 'on') === 'on',
    unknownTokenPerMinute: e.KB_UNKNOWN_TOKEN_PER_MINUTE ?? 20,
    headersTimeoutMs: e.KB_HEADERS_TIMEOUT_MS ?? 20_000,
    bodyTimeoutMs: e.KB_BODY_TIMEOUT_MS ?? 30_000,
    uploadTimeoutMs: e.KB_UPLOAD_TIMEOUT_MS ?? 10 * 60_000,
    // AWS ALB's idle time-out is 60 s: the server must not close a connection the balancer is about to reuse.
    keepAliveTimeoutMs: e.KB_KEEP_ALIVE_TIMEOUT_MS ?? 65_000,
    uploadRatePerMinute: e.KB_UPLOAD_RATE_PER_MINUTE ?? 60,
    extraction: {
      maxExtractedBytes: e.KB_MAX_EXTRACTED_BYTES ?? 64 * 1024 * 1024,
      maxZipEntries: e.KB_MAX_ZIP_ENTRIES ?? 5000,
      maxPdfPages: e.KB_MAX_PDF_PAGES ?? 5000,
      timeoutMs: e.KB_EXTRACT_TIMEOUT_MS ?? 120_000,
    },
    processing: { concurrency: 0, perWorkspace: 0 },
    reprocessPerMinute: e.KB_REPROCESS_PER_MINUTE ?? 10,
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
  if (config.chunkOverlap >= config.chunkTokens) missing.push('KB_CHUNK_OVERLAP must be smaller than KB_CHUNK_TOKENS');
  if (missing.length) throw new ConfigError(`Invalid configuration, missing or inconsistent:\n  ${missing.join('\n  ')}`);
  return config;
}
