import { EachMessagePayload, Kafka, KafkaJSProtocolError } from 'kafkajs';
import { JobAbandonedError, KafkaJobQueue } from '../../src/adapters/kafka/kafkaJobQueue';
import { jobMessage } from '../../src/adapters/kafka/kafkaMessages';
import { loadConfig } from '../../src/config/config';
import { Job } from '../../src/ports/jobQueue';

/**
 * The job queue at the level of the calls it makes on kafkajs: a fake Kafka whose consumer
 * records its configuration and hands back the `eachMessage` the adapter registers, which the
 * test drives with a heartbeat that answers as a broker does during a rebalance.
 */
function fakeKafka() {
  const sent: { topic: string }[] = [];
  const state: { config?: Record<string, unknown>; eachMessage?: (p: EachMessagePayload) => Promise<void> } = {};
  const kafka = {
    producer: () => ({ connect: async () => undefined, disconnect: async () => undefined, send: async (r: { topic: string }) => void sent.push(r) }),
    consumer: (config: Record<string, unknown>) => {
      state.config = config;
      return {
        connect: async () => undefined,
        disconnect: async () => undefined,
        subscribe: async () => undefined,
        run: async (r: { eachMessage: (p: EachMessagePayload) => Promise<void> }) => void (state.eachMessage = r.eachMessage),
      };
    },
    admin: () => ({ connect: async () => undefined, disconnect: async () => undefined, listTopics: async () => [], createTopics: async () => true }),
  } as unknown as Pick<Kafka, 'producer' | 'consumer' | 'admin'>;
  return { kafka, sent, state };
}

const rebalanceError = (): KafkaJSProtocolError => Object.assign(new KafkaJSProtocolError('The group is rebalancing, so a rejoin is needed'), { type: 'REBALANCE_IN_PROGRESS', code: 27 });
const job: Job = { id: 'job-1', type: 'process', payload: {} };
function payload(heartbeat: () => Promise<void>): EachMessagePayload {
  const m = jobMessage(job);
  return {
    topic: 'kb.jobs',
    partition: 0,
    message: { key: Buffer.from(String(m.key)), value: Buffer.from(String(m.value)), offset: '0', timestamp: '0', attributes: 0, size: 0, headers: {} },
    heartbeat,
    pause: () => () => undefined,
  } as unknown as EachMessagePayload;
}
const logger = () => ({ warn: jest.fn(), error: jest.fn() });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A heartbeat answering REBALANCE_IN_PROGRESS, and a promise settled once it has answered (and its catch ran). */
function rebalancingHeartbeat() {
  let answered!: () => void;
  const once = new Promise<void>((r) => (answered = r));
  const heartbeat = async () => {
    setImmediate(answered);
    throw rebalanceError();
  };
  return { heartbeat, answered: once.then(() => sleep(0)) };
}

describe('KafkaJobQueue and consumer-group rebalances (fake kafkajs client)', () => {
  it('sizes the rebalance time-out from its option (above the longest job)', async () => {
    const f = fakeKafka();
    const q = new KafkaJobQueue({ brokers: ['x:9092'], kafka: f.kafka, rebalanceTimeoutMs: 900_000 });
    await q.consume(async () => undefined);
    expect(f.state.config).toMatchObject({ rebalanceTimeout: 900_000, sessionTimeout: 30_000, heartbeatInterval: 3000 });
  });

  it('a job failing once a heartbeat reported a rebalance is abandoned: no retry, no dead letter, offset left uncommitted', async () => {
    const f = fakeKafka();
    const log = logger();
    const q = new KafkaJobQueue({ brokers: ['x:9092'], kafka: f.kafka, heartbeatWhileHandlingMs: 5, logger: log });
    let runs = 0;
    const hb = rebalancingHeartbeat();
    await q.consume(
      async () => {
        runs++;
        await hb.answered;
        throw new Error('embedding call failed');
      },
      { retryDelayMs: () => 0 },
    );
    await expect(f.state.eachMessage!(payload(hb.heartbeat))).rejects.toBeInstanceOf(JobAbandonedError);
    expect(runs).toBe(1);
    expect(f.sent).toEqual([]); // nothing dead-lettered
    expect(log.warn).toHaveBeenCalledWith(expect.objectContaining({ jobId: 'job-1' }), expect.stringContaining('rebalancing'));
  });

  it('a job that completes during a rebalance is recorded as handled and the rebalance logged, not swallowed', async () => {
    const f = fakeKafka();
    const log = logger();
    const q = new KafkaJobQueue({ brokers: ['x:9092'], kafka: f.kafka, heartbeatWhileHandlingMs: 5, rebalanceTimeoutMs: 10_000, logger: log });
    let runs = 0;
    const hb = rebalancingHeartbeat();
    await q.consume(async () => {
      runs++;
      await hb.answered;
    });
    await f.state.eachMessage!(payload(hb.heartbeat));
    await f.state.eachMessage!(payload(hb.heartbeat)); // redelivered: already handled
    expect(runs).toBe(1);
    expect(log.warn).toHaveBeenCalledTimes(1);
    expect(log.error).not.toHaveBeenCalled();
  });

  it('a job that outlived the rebalance time-out is reported as an error (it may have run twice)', async () => {
    const f = fakeKafka();
    const log = logger();
    const q = new KafkaJobQueue({ brokers: ['x:9092'], kafka: f.kafka, heartbeatWhileHandlingMs: 5, rebalanceTimeoutMs: 10, logger: log });
    const hb = rebalancingHeartbeat();
    await q.consume(async () => {
      await hb.answered;
      await sleep(30); // past the 10 ms time-out
    });
    await f.state.eachMessage!(payload(hb.heartbeat));
    expect(log.error).toHaveBeenCalledWith(expect.objectContaining({ jobId: 'job-1', rebalanceTimeoutMs: 10 }), expect.stringContaining('KB_KAFKA_REBALANCE_TIMEOUT_MS'));
  });

  it('without a rebalance a failing job is still retried in place', async () => {
    const f = fakeKafka();
    const q = new KafkaJobQueue({ brokers: ['x:9092'], kafka: f.kafka, heartbeatWhileHandlingMs: 5 });
    let runs = 0;
    await q.consume(
      async () => {
        if (++runs === 1) throw new Error('transient');
      },
      { retryDelayMs: () => 0 },
    );
    await f.state.eachMessage!(payload(async () => undefined));
    expect(runs).toBe(2);
  });

  it('configuration: the rebalance time-out defaults to 15 min and must exceed the extraction time-out', () => {
    expect(loadConfig({}).kafkaRebalanceTimeoutMs).toBe(900_000);
    expect(() => loadConfig({ KB_FEED: 'kafka', KB_KAFKA_BROKERS: 'k:9092', KB_EXTRACT_TIMEOUT_MS: '600000', KB_KAFKA_REBALANCE_TIMEOUT_MS: '600000' })).toThrow('KB_KAFKA_REBALANCE_TIMEOUT_MS must be above KB_EXTRACT_TIMEOUT_MS');
    expect(loadConfig({ KB_FEED: 'kafka', KB_KAFKA_BROKERS: 'k:9092', KB_KAFKA_REBALANCE_TIMEOUT_MS: '1800000' }).kafkaRebalanceTimeoutMs).toBe(1_800_000);
  });
});
