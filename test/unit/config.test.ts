import { ConfigError, loadConfig } from '../../src/config/config';

const messageOf = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('expected a ConfigError');
};

describe('configuration of the production topology', () => {
  it('defaults to the embedded adapters in one process', () => {
    const c = loadConfig({});
    expect([c.role, c.eventStore, c.readStore, c.searchIndex, c.feed, c.embeddings]).toEqual(['all', 'sqlite', 'sqlite', 'embedded', 'none', 'local']);
  });

  it.each([
    [{ KB_EVENT_STORE: 'eventstoredb' }, 'KB_EVENTSTOREDB_URL (KB_EVENT_STORE=eventstoredb)'],
    [{ KB_READ_STORE: 'mongodb' }, 'KB_MONGODB_URL (KB_READ_STORE=mongodb)'],
    [{ KB_SEARCH_INDEX: 'elasticsearch' }, 'KB_ELASTICSEARCH_URL (KB_SEARCH_INDEX=elasticsearch)'],
    [{ KB_FEED: 'kafka' }, 'KB_KAFKA_BROKERS (KB_FEED=kafka)'],
    [{ KB_EMBEDDINGS: 'openai' }, 'KB_OPENAI_API_KEY or KB_OPENAI_BASE_URL (KB_EMBEDDINGS=openai)'],
  ])('names the missing URL for %j', (env, expected) => {
    expect(messageOf(env)).toContain(expected);
  });

  it('names every missing URL at once', () => {
    const m = messageOf({ KB_EVENT_STORE: 'eventstoredb', KB_READ_STORE: 'mongodb', KB_SEARCH_INDEX: 'elasticsearch', KB_FEED: 'kafka' });
    for (const v of ['KB_EVENTSTOREDB_URL', 'KB_MONGODB_URL', 'KB_ELASTICSEARCH_URL', 'KB_KAFKA_BROKERS']) expect(m).toContain(v);
  });

  it('a broker list of only commas and spaces counts as missing', () => {
    expect(messageOf({ KB_FEED: 'kafka', KB_KAFKA_BROKERS: ' , ' })).toContain('KB_KAFKA_BROKERS');
  });

  it.each([
    ['KB_ROLE', 'frontend'],
    ['KB_EVENT_STORE', 'postgres'],
    ['KB_READ_STORE', 'redis'],
    ['KB_SEARCH_INDEX', 'solr'],
    ['KB_FEED', 'nats'],
  ])('refuses %s=%s with the variable and the value', (name, value) => {
    const m = messageOf({ [name]: value });
    expect(m).toContain(`${name}="${value}" is not valid`);
  });

  it('accepts the production switches with their URLs', () => {
    const c = loadConfig({
      KB_ROLE: 'worker',
      KB_EVENT_STORE: 'eventstoredb',
      KB_EVENTSTOREDB_URL: 'esdb://kurrentdb:2113?tls=false',
      KB_READ_STORE: 'mongodb',
      KB_MONGODB_URL: 'mongodb://mongo:27017/?replicaSet=rs0',
      KB_SEARCH_INDEX: 'elasticsearch',
      KB_ELASTICSEARCH_URL: 'http://elasticsearch:9200',
      KB_FEED: 'kafka',
      KB_KAFKA_BROKERS: 'kafka-1:9092, kafka-2:9092',
    });
    expect(c.role).toBe('worker');
    expect(c.kafkaBrokers).toEqual(['kafka-1:9092', 'kafka-2:9092']);
    expect(c.mongoDb).toBe('kb');
    expect(c.elasticsearchIndex).toBe('kb-chunks');
  });
});

describe('configuration of the approximate dense index', () => {
  it('unset: no setting of its own (the index keeps its defaults)', () => {
    expect(loadConfig({}).denseAnn).toEqual({});
  });

  it('reads the threshold, the probe depth and the minimum scanned from their variables', () => {
    const c = loadConfig({ KB_DENSE_INDEX_MIN_CHUNKS: '50000', KB_DENSE_INDEX_PROBE_LISTS: '96', KB_DENSE_INDEX_MIN_PROBE: '8192' });
    expect(c.denseAnn).toEqual({ minChunks: 50000, probeLists: 96, minProbe: 8192 });
    expect(loadConfig({ KB_DENSE_INDEX_PROBE_LISTS: '1' }).denseAnn).toEqual({ probeLists: 1 });
    expect(loadConfig({ KB_DENSE_INDEX_MIN_CHUNKS: '1000' }).denseAnn).toEqual({ minChunks: 1000 });
  });

  it.each([
    ['KB_DENSE_INDEX_MIN_CHUNKS', '999', 'expected chunks 1000..1000000000'],
    ['KB_DENSE_INDEX_MIN_CHUNKS', '-20000', 'expected chunks 1000..1000000000'],
    ['KB_DENSE_INDEX_MIN_CHUNKS', '2e4', 'must be an integer'],
    ['KB_DENSE_INDEX_PROBE_LISTS', '0', 'expected lists 1..100000'],
    ['KB_DENSE_INDEX_PROBE_LISTS', '100001', 'expected lists 1..100000'],
    ['KB_DENSE_INDEX_PROBE_LISTS', 'many', 'must be an integer'],
    ['KB_DENSE_INDEX_MIN_PROBE', '0', 'expected chunks 1..100000000'],
    ['KB_DENSE_INDEX_MIN_PROBE', '1.5', 'must be an integer'],
  ])('refuses %s=%s at start-up, naming the variable, the value and why', (name, value, why) => {
    expect(messageOf({ [name]: value })).toContain(`${name}="${value}" is not valid (${why})`);
  });

  it('names every bad setting at once', () => {
    const m = messageOf({ KB_DENSE_INDEX_MIN_CHUNKS: '10', KB_DENSE_INDEX_PROBE_LISTS: '0', KB_DENSE_INDEX_MIN_PROBE: 'x' });
    for (const v of ['KB_DENSE_INDEX_MIN_CHUNKS', 'KB_DENSE_INDEX_PROBE_LISTS', 'KB_DENSE_INDEX_MIN_PROBE']) expect(m).toContain(v);
  });
});
