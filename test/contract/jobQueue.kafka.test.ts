import { randomUUID } from 'node:crypto';
import { KafkaJobQueue } from '../../src/adapters/kafka/kafkaJobQueue';
import { jobQueueContract } from './jobQueue.contract';

const brokers = process.env.KB_TEST_KAFKA_BROKERS;

if (brokers) {
  // Own topics (one partition: the suite checks order) and consumer group per queue.
  jobQueueContract('KafkaJobQueue', async () => {
    const suffix = randomUUID().slice(0, 8);
    return new KafkaJobQueue({
      brokers: brokers.split(','),
      topic: `kb.jobs.test-${suffix}`,
      dlqTopic: `kb.jobs.dlq.test-${suffix}`,
      groupId: `kb-workers-test-${suffix}`,
      numPartitions: 1,
    }).connect();
  });
} else {
  describe.skip('JobQueue contract: KafkaJobQueue (skipped: set KB_TEST_KAFKA_BROKERS, e.g. localhost:9092)', () => {
    it('needs a broker', () => undefined);
  });
}
