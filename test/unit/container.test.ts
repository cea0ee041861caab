import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { buildContainer, closeContainer } from '../../src/container';
import { loadConfig } from '../../src/config/config';
import { connectOrFail, redactCredentials, StartupError } from '../../src/app/startup';
import { MONGO_CLIENT, optional, STORED_EVENT_STORE } from '../../src/app/tokens';
import { JOB_QUEUE } from '../../src/ports/jobQueue';
import { EVENT_FEED } from '../../src/ports/eventFeed';
import { EncryptingEventStore } from '../../src/adapters/encryption/encryptingEventStore';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { SqliteKeyStore } from '../../src/adapters/sqlite/sqliteKeyStore';
import { EmbeddedSearchIndex } from '../../src/adapters/embedded/embeddedSearchIndex';
import { DEFAULT_ANN } from '../../src/adapters/embedded/ivfIndex';
import { WorkerSearchIndex } from '../../src/adapters/embedded/workerSearchIndex';
import { FsBlobStore } from '../../src/adapters/fs/fsBlobStore';
import { KEY_STORE } from '../../src/ports/keyStore';

const logger = pino({ level: 'silent' });

describe('composition root', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-container-'));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('runs the embedded index on the main thread with KB_SEARCH_THREAD=main', async () => {
    const { ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir, KB_SEARCH_THREAD: 'main' }), logger);
    try {
      expect(ctx.searchIndex).toBeInstanceOf(EmbeddedSearchIndex);
    } finally {
      await closeContainer(di);
    }
  });

  it('KB_DENSE_INDEX: the approximate dense index by default, an exact scan always with `exact`', async () => {
    for (const [value, enabled] of [[undefined, true], ['exact', false], ['approximate', true]] as const) {
      const { ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir, KB_SEARCH_THREAD: 'main', ...(value ? { KB_DENSE_INDEX: value } : {}) }), logger);
      try {
        expect([value, (ctx.searchIndex as EmbeddedSearchIndex).annSettings.enabled]).toEqual([value, enabled]);
      } finally {
        await closeContainer(di);
      }
    }
    expect(() => loadConfig({ KB_DATA_DIR: dir, KB_DENSE_INDEX: 'hnsw' })).toThrow(/KB_DENSE_INDEX/);
  });

  it('KB_DENSE_INDEX_MIN_CHUNKS, _PROBE_LISTS, _MIN_PROBE reach the approximate index; unset, its defaults', async () => {
    const settingsOf = async (env: Record<string, string>) => {
      const { ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir, KB_SEARCH_THREAD: 'main', ...env }), logger);
      try {
        const { enabled, buildAt, minScope, probeLists, minProbe } = (ctx.searchIndex as EmbeddedSearchIndex).annSettings;
        return { enabled, buildAt, minScope, probeLists, minProbe };
      } finally {
        await closeContainer(di);
      }
    };
    const { enabled, buildAt, minScope, probeLists, minProbe } = DEFAULT_ANN;
    expect(await settingsOf({})).toEqual({ enabled, buildAt, minScope, probeLists, minProbe });
    expect(await settingsOf({ KB_DENSE_INDEX_MIN_CHUNKS: '50000', KB_DENSE_INDEX_PROBE_LISTS: '96', KB_DENSE_INDEX_MIN_PROBE: '8192' })).toEqual({
      enabled: true,
      buildAt: 50000,
      minScope: 50000,
      probeLists: 96,
      minProbe: 8192,
    });
    expect(await settingsOf({ KB_DENSE_INDEX_PROBE_LISTS: '32' })).toEqual({ enabled, buildAt, minScope, probeLists: 32, minProbe });
  });

  it('wires the embedded adapters by default, the encryption decorator around the event store', async () => {
    const { ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir }), logger);
    try {
      expect(ctx.eventStore).toBeInstanceOf(EncryptingEventStore);
      const enc = ctx.eventStore as EncryptingEventStore;
      expect(enc.wrapped).toBeInstanceOf(SqliteEventStore);
      expect(enc.wrappedKeyStore).toBeInstanceOf(SqliteKeyStore);
      expect(di.resolve(KEY_STORE)).toBe(enc.keyStore);
      expect(ctx.readStore).toBeInstanceOf(SqliteReadStore);
      // The embedded index runs in its own thread by default.
      expect(ctx.searchIndex).toBeInstanceOf(WorkerSearchIndex);
      expect(ctx.blobStore).toBeInstanceOf(FsBlobStore);
      expect(ctx.runner.mode).toBe('subscribe');
      expect(optional(di, JOB_QUEUE)).toBeUndefined();
      expect(optional(di, EVENT_FEED)).toBeUndefined();
      expect(optional(di, MONGO_CLIENT)).toBeUndefined();
      expect(di.resolve(STORED_EVENT_STORE)).toBe(enc.wrapped);
      expect(ctx.services.map((s) => s.name)).toContain('document-processor');
    } finally {
      await closeContainer(di);
    }
  });

  it.each([
    ['api', 'poll'],
    ['worker', 'poll'],
    ['projector', 'subscribe'],
    ['all', 'subscribe'],
  ] as const)('KB_ROLE=%s: the runner %ss', async (role, mode) => {
    const { ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir, KB_ROLE: role }), logger);
    try {
      expect(ctx.runner.mode).toBe(mode);
    } finally {
      await closeContainer(di);
    }
  });

  // Nothing listens on port 1: each production adapter must fail the start with its variable and URL.
  it.each([
    [{ KB_SEARCH_INDEX: 'elasticsearch', KB_ELASTICSEARCH_URL: 'http://127.0.0.1:1' }, 'cannot connect to Elasticsearch at KB_ELASTICSEARCH_URL=http://127.0.0.1:1: '],
    [{ KB_EVENT_STORE: 'eventstoredb', KB_EVENTSTOREDB_URL: 'esdb://127.0.0.1:1?tls=false' }, 'cannot connect to EventStoreDB at KB_EVENTSTOREDB_URL=esdb://127.0.0.1:1?tls=false: '],
    [{ KB_READ_STORE: 'mongodb', KB_MONGODB_URL: 'mongodb://kb:s3cret@127.0.0.1:1/' }, 'cannot connect to MongoDB at KB_MONGODB_URL=mongodb://***@127.0.0.1:1/: '],
  ])('an unreachable server stops the start: %j', async (env, expected) => {
    const err = await buildContainer(loadConfig({ KB_DATA_DIR: dir, ...env }), logger, { connectTimeoutMs: 2000 }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StartupError);
    const message = (err as Error).message;
    expect(message.startsWith(expected)).toBe(true);
    expect(message).not.toContain('\n');
    expect(message).not.toContain('s3cret');
  });
});

describe('start-up connection helper', () => {
  it('removes credentials from URLs', () => {
    expect(redactCredentials('mongodb://user:pa%40ss@h1:27017,h2:27017/kb?replicaSet=rs0')).toBe('mongodb://***@h1:27017,h2:27017/kb?replicaSet=rs0');
    expect(redactCredentials('http://elastic:changeme@es:9200')).toBe('http://***@es:9200');
    expect(redactCredentials('esdb://kurrentdb:2113?tls=false')).toBe('esdb://kurrentdb:2113?tls=false');
  });

  it('gives up after the timeout, releases the attempt, and names the variable', async () => {
    let released = false;
    const err = await connectOrFail('Kafka', 'KB_KAFKA_BROKERS', 'k1:9092,k2:9092', () => new Promise(() => undefined), {
      timeoutMs: 50,
      abandon: () => {
        released = true;
      },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StartupError);
    expect((err as Error).message).toBe('cannot connect to Kafka at KB_KAFKA_BROKERS=k1:9092,k2:9092: no answer within 50 ms');
    expect(released).toBe(true);
  });

  it('passes the connected value through', async () => {
    await expect(connectOrFail('X', 'KB_X', 'x://y', async () => 42)).resolves.toBe(42);
  });
});
