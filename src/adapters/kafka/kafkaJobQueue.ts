import { Admin, Consumer, Kafka, Producer } from 'kafkajs';
import { ConsumeOptions, Job, JobConsumer, JobHandler, JobQueue } from '../../ports/jobQueue';
import { DEFAULT_MAX_ATTEMPTS, HandledJobs, InMemoryHandledJobs, decideOnFailure, decodeJob, defaultRetryDelay } from '../jobRetry';
import { JOBS_DLQ_TOPIC, JOBS_TOPIC, WORKERS_GROUP, deadLetterMessage, jobMessage } from './kafkaMessages';

export interface KafkaJobQueueOptions {
  brokers: string[];
  clientId?: string;
  topic?: string;
  dlqTopic?: string;
  groupId?: string;
  /** Partitions of the job topic when this queue creates it (the upper bound of parallel workers). */
  numPartitions?: number;
  /**
   * Handled job ids. The in-memory default covers redeliveries within one process; pass a
   * shared store (e.g. ReadStoreHandledJobs over MongoDB) to cover rebalances across workers.
   */
  handled?: HandledJobs;
}

/**
 * JobQueue on Kafka: jobs on `kb.jobs` keyed by job id, consumed by the `kb-workers`
 * group. A failing job is retried in place (the partition waits; heartbeats keep the
 * member alive), then published to `kb.jobs.dlq` with the error and the attempt count,
 * and its offset committed so a poison message never blocks the partition. Undecodable
 * messages go to the DLQ at once.
 */
/** How often a consumer heartbeats while a job runs (kafkajs sends at most one per heartbeatInterval). */
const HEARTBEAT_WHILE_HANDLING_MS = 3000;

export class KafkaJobQueue implements JobQueue {
  private readonly kafka: Kafka;
  private readonly producer: Producer;
  private readonly topic: string;
  private readonly dlqTopic: string;
  private readonly groupId: string;
  private readonly numPartitions: number;
  private readonly handled: HandledJobs;
  private readonly consumers = new Set<JobConsumer>();

  constructor(options: KafkaJobQueueOptions) {
    this.kafka = new Kafka({ clientId: options.clientId ?? 'kb-jobs', brokers: options.brokers });
    this.producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    this.topic = options.topic ?? JOBS_TOPIC;
    this.dlqTopic = options.dlqTopic ?? JOBS_DLQ_TOPIC;
    this.groupId = options.groupId ?? WORKERS_GROUP;
    this.numPartitions = options.numPartitions ?? 6;
    this.handled = options.handled ?? new InMemoryHandledJobs();
  }

  /** Creates the job and dead-letter topics when missing and connects the producer. */
  async connect(): Promise<this> {
    const admin: Admin = this.kafka.admin();
    await admin.connect();
    try {
      const existing = new Set(await admin.listTopics());
      const topics = [
        { topic: this.topic, numPartitions: this.numPartitions },
        { topic: this.dlqTopic, numPartitions: 1 },
      ].filter((t) => !existing.has(t.topic));
      if (topics.length) await admin.createTopics({ topics, waitForLeaders: true });
    } finally {
      await admin.disconnect();
    }
    await this.producer.connect();
    return this;
  }

  async enqueue(job: Job): Promise<void> {
    await this.producer.send({ topic: this.topic, acks: -1, messages: [jobMessage(job)] });
  }

  async consume(handler: JobHandler, options: ConsumeOptions = {}): Promise<JobConsumer> {
    const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    const retryDelayMs = options.retryDelayMs ?? defaultRetryDelay;
    const consumer: Consumer = this.kafka.consumer({ groupId: this.groupId });
    let stopping = false;
    await consumer.connect();
    await consumer.subscribe({ topics: [this.topic], fromBeginning: true });
    await consumer.run({
      // `maxPerGroup` needs no enforcing here: a group's jobs share one partition (jobMessage),
      // and a partition's messages are handled one at a time.
      partitionsConsumedConcurrently: Math.max(1, options.concurrency ?? 1),
      eachMessage: async ({ message, heartbeat }) => {
        let job: Job;
        try {
          job = decodeJob(message.value);
        } catch (error) {
          await this.deadLetter(null, message.value?.toString() ?? null, message.key?.toString() ?? null, error, 0);
          return;
        }
        if (await this.handled.has(job.id)) return;
        for (let attempt = 1; ; attempt++) {
          // A document can take minutes to embed: keep the group membership alive meanwhile,
          // so the partition is not reassigned and the job redelivered mid-run.
          const beat = setInterval(() => void heartbeat().catch(() => undefined), HEARTBEAT_WHILE_HANDLING_MS);
          try {
            await handler(job);
            clearInterval(beat);
            await this.handled.add(job.id);
            return;
          } catch (error) {
            clearInterval(beat);
            const decision = decideOnFailure(attempt, error, maxAttempts, retryDelayMs);
            if (decision.kind === 'dead-letter') {
              await this.deadLetter(job, null, job.id, error, attempt);
              await options.onDeadLetter?.(job, error);
              return;
            }
            // Stopping mid-retry: leave the offset uncommitted, another member retries it.
            if (stopping) throw error;
            if (decision.delayMs > 0) await new Promise((r) => setTimeout(r, decision.delayMs));
            await heartbeat();
          }
        }
      },
    });
    const handle: JobConsumer = {
      stop: async () => {
        stopping = true;
        this.consumers.delete(handle);
        await consumer.disconnect(); // waits for the message being handled, commits offsets
      },
    };
    this.consumers.add(handle);
    return handle;
  }

  private async deadLetter(job: Job | null, raw: string | null, key: string | null, error: unknown, attempts: number): Promise<void> {
    await this.producer.send({ topic: this.dlqTopic, acks: -1, messages: [deadLetterMessage({ job, raw, key, error, attempts, sourceTopic: this.topic })] });
  }

  async close(): Promise<void> {
    await Promise.all([...this.consumers].map((c) => c.stop()));
    await this.producer.disconnect();
  }
}
