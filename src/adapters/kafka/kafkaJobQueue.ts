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
  /**
   * How long the group waits, in a rebalance, for this member to finish its job and rejoin
   * (kafkajs `rebalanceTimeout`; default 15 min). A job is not cancellable, so this must be
   * above the longest job (extraction, KB_EXTRACT_TIMEOUT_MS, plus embedding): a member still
   * busy past it is dropped from the group and the job redelivered to another one.
   */
  rebalanceTimeoutMs?: number;
  /** Heartbeats sent while a job runs (default 3000 ms; kafkajs sends at most one per its heartbeatInterval). */
  heartbeatWhileHandlingMs?: number;
  logger?: JobQueueLogger;
  /** The kafkajs client (tests pass a fake of its producer/consumer/admin API). */
  kafka?: Pick<Kafka, 'producer' | 'consumer' | 'admin'>;
}

export interface JobQueueLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Heartbeat errors that mean the group is rebalancing or this member has lost its assignment. */
const REBALANCE_ERRORS = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'NOT_COORDINATOR_FOR_GROUP', 'FENCED_INSTANCE_ID']);
const isRebalance = (err: unknown): boolean => REBALANCE_ERRORS.has((err as { type?: string } | null)?.type ?? '');

/** Thrown out of a job's message handler to leave its offset uncommitted: the partition's next owner runs it. */
export class JobAbandonedError extends Error {
  constructor(
    readonly jobId: string,
    readonly rebalanceError: unknown,
  ) {
    super(`job ${jobId} abandoned: the consumer group is rebalancing`);
    this.name = 'JobAbandonedError';
  }
}

/**
 * JobQueue on Kafka: jobs on `kb.jobs` keyed by job id, consumed by the `kb-workers`
 * group. A failing job is retried in place (the partition waits; heartbeats keep the
 * member alive), then published to `kb.jobs.dlq` with the error and the attempt count,
 * and its offset committed so a poison message never blocks the partition. Undecodable
 * messages go to the DLQ at once.
 *
 * Rebalances: a running job cannot be cancelled, so the group's `rebalanceTimeout` is sized
 * above the longest job and the member finishes it before rejoining; a heartbeat's rebalance
 * error is logged, not swallowed. A job that fails once a rebalance has begun is abandoned
 * (no retry here, no dead letter, offset left uncommitted) so the member rejoins at once and
 * the partition's next owner runs it; a job that outlived the rebalance time-out is logged
 * as an error (another member may have run it too: raise the time-out).
 */

export class KafkaJobQueue implements JobQueue {
  private readonly kafka: Pick<Kafka, 'producer' | 'consumer' | 'admin'>;
  private readonly rebalanceTimeoutMs: number;
  private readonly heartbeatWhileHandlingMs: number;
  private readonly logger?: JobQueueLogger;
  private readonly producer: Producer;
  private readonly topic: string;
  private readonly dlqTopic: string;
  private readonly groupId: string;
  private readonly numPartitions: number;
  private readonly handled: HandledJobs;
  private readonly consumers = new Set<JobConsumer>();

  constructor(options: KafkaJobQueueOptions) {
    this.kafka = options.kafka ?? new Kafka({ clientId: options.clientId ?? 'kb-jobs', brokers: options.brokers });
    this.rebalanceTimeoutMs = options.rebalanceTimeoutMs ?? 15 * 60_000;
    this.heartbeatWhileHandlingMs = options.heartbeatWhileHandlingMs ?? 3000;
    this.logger = options.logger;
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
    // Session: heartbeats (sent while a job runs, too) keep the member alive; rebalance: the
    // group waits this long for a busy member to finish its job and rejoin.
    const consumer: Consumer = this.kafka.consumer({ groupId: this.groupId, rebalanceTimeout: this.rebalanceTimeoutMs, sessionTimeout: 30_000, heartbeatInterval: 3000 });
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
          let rebalance: unknown = null;
          const started = Date.now();
          const beat = setInterval(() => {
            heartbeat().catch((err: unknown) => {
              if (!isRebalance(err)) return this.logger?.warn({ err, jobId: job.id }, 'job queue heartbeat failed');
              if (rebalance) return;
              rebalance = err;
              this.logger?.warn({ err, jobId: job.id, jobType: job.type, rebalanceTimeoutMs: this.rebalanceTimeoutMs }, 'consumer group rebalancing while a job runs; the job finishes before this member rejoins');
            });
          }, this.heartbeatWhileHandlingMs);
          try {
            await handler(job);
            clearInterval(beat);
            const ranMs = Date.now() - started;
            if (rebalance && ranMs > this.rebalanceTimeoutMs) {
              this.logger?.error(
                { jobId: job.id, jobType: job.type, ranMs, rebalanceTimeoutMs: this.rebalanceTimeoutMs },
                'job outlived the rebalance time-out: this member may have left the group and another may run the job again; raise KB_KAFKA_REBALANCE_TIMEOUT_MS above the longest job',
              );
            }
            await this.handled.add(job.id);
            return;
          } catch (error) {
            clearInterval(beat);
            // The group is rebalancing: do not retry or dead-letter here (this member may lose the
            // partition); leave the offset uncommitted and rejoin, the partition's owner retries.
            if (rebalance) {
              this.logger?.warn({ err: error, jobId: job.id, attempt }, 'job failed during a rebalance; abandoned to the partition\'s next owner');
              throw new JobAbandonedError(job.id, rebalance);
            }
            const decision = decideOnFailure(attempt, error, maxAttempts, retryDelayMs);
            if (decision.kind === 'dead-letter') {
              await this.deadLetter(job, null, job.id, error, attempt);
              await options.onDeadLetter?.(job, error);
              return;
            }
            // Stopping mid-retry: leave the offset uncommitted, another member retries it.
            if (stopping) throw error;
            if (decision.delayMs > 0) await new Promise((r) => setTimeout(r, decision.delayMs));
            await heartbeat(); // a rebalance error here leaves the job to the partition's next owner too
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
