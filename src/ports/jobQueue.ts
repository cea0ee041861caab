/** A unit of background work (e.g. process an uploaded document). `id` is its idempotency key. */
export interface Job {
  id: string;
  type: string;
  payload: Record<string, unknown>;
  /**
   * Fairness key (a workspace id): jobs of different groups are served round-robin rather
   * than first come, and at most `maxPerGroup` of one group run at once, as far as the
   * adapter can (see each adapter). Jobs without a group share one.
   */
  group?: string;
}

/**
 * Thrown by a job handler (or a decoder) for a message that can never be handled
 * (undecodable, unknown type or shape): the queue dead-letters it at once, without retries.
 */
export class PoisonMessageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PoisonMessageError';
  }
}

export type JobHandler = (job: Job) => Promise<void>;

export interface ConsumeOptions {
  /** Attempts per job before it is dead-lettered (default 5). */
  maxAttempts?: number;
  /** Delay before retry `attempt` (1-based count of failures so far); default exponential from 500 ms. */
  retryDelayMs?: (attempt: number) => number;
  /** Jobs handled at the same time by this consumer (default 1). */
  concurrency?: number;
  /** Jobs of one group handled at the same time by this consumer (default: `concurrency`). */
  maxPerGroup?: number;
  /** Called after a job was moved to the dead-letter queue. */
  onDeadLetter?: (job: Job, error: unknown) => void | Promise<void>;
}

export interface JobConsumer {
  /** Stop taking jobs; resolves once no handler of this consumer is running. */
  stop(): Promise<void>;
}

/**
 * Work queue with at-least-once delivery: a job is handled until its handler succeeds,
 * at most `maxAttempts` times, then dead-lettered. A job id that was already handled
 * successfully is not handled again.
 */
export interface JobQueue {
  enqueue(job: Job): Promise<void>;
  consume(handler: JobHandler, options?: ConsumeOptions): Promise<JobConsumer>;
  close(): Promise<void>;
}

export const JOB_QUEUE = Symbol('JOB_QUEUE');
