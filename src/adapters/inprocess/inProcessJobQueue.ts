import { ConsumeOptions, Job, JobConsumer, JobHandler, JobQueue } from '../../ports/jobQueue';
import { DEFAULT_MAX_ATTEMPTS, HandledJobs, InMemoryHandledJobs, decideOnFailure, defaultRetryDelay } from '../jobRetry';

export interface DeadLetter {
  job: Job;
  error: unknown;
  attempts: number;
}

interface Waiter {
  take: (job: Job) => boolean;
}

/**
 * JobQueue inside one process (the embedded default): a FIFO shared by competing
 * consumers, retries with backoff, a dead-letter list, and de-duplication by job id
 * (an id queued, running or handled is not queued again).
 */
export class InProcessJobQueue implements JobQueue {
  private readonly pending: Job[] = [];
  private readonly known = new Set<string>();
  private readonly waiters: Waiter[] = [];
  private readonly dead: DeadLetter[] = [];
  private closed = false;

  constructor(private readonly handled: HandledJobs = new InMemoryHandledJobs()) {}

  async enqueue(job: Job): Promise<void> {
    if (this.closed) throw new Error('job queue is closed');
    if (this.known.has(job.id) || (await this.handled.has(job.id))) return;
    this.known.add(job.id);
    this.offer(job);
  }

  private offer(job: Job): void {
    while (this.waiters.length) {
      if (this.waiters.shift()!.take(job)) return;
    }
    this.pending.push(job);
  }

  /** Jobs that failed every attempt, oldest first. */
  deadLetters(): DeadLetter[] {
    return [...this.dead];
  }

  async consume(handler: JobHandler, options: ConsumeOptions = {}): Promise<JobConsumer> {
    const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    const retryDelayMs = options.retryDelayMs ?? defaultRetryDelay;
    let stopped = false;
    const idle = new Set<() => void>();
    const next = (): Promise<Job | null> => {
      const job = this.pending.shift();
      if (job) return Promise.resolve(job);
      return new Promise((resolve) => {
        const cancel = (): void => {
          idle.delete(cancel);
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          resolve(null);
        };
        const waiter: Waiter = {
          take: (j) => {
            if (stopped) return false;
            idle.delete(cancel);
            resolve(j);
            return true;
          },
        };
        this.waiters.push(waiter);
        idle.add(cancel);
      });
    };
    const handle = async (job: Job): Promise<void> => {
      for (let attempt = 1; ; attempt++) {
        try {
          await handler(job);
          await this.handled.add(job.id);
          this.known.delete(job.id);
          return;
        } catch (error) {
          const decision = decideOnFailure(attempt, error, maxAttempts, retryDelayMs);
          if (decision.kind === 'dead-letter') {
            this.dead.push({ job, error, attempts: attempt });
            this.known.delete(job.id);
            await options.onDeadLetter?.(job, error);
            return;
          }
          if (decision.delayMs > 0) await new Promise((r) => setTimeout(r, decision.delayMs));
        }
      }
    };
    const worker = async (): Promise<void> => {
      while (!stopped) {
        const job = await next();
        if (!job) return;
        await handle(job);
      }
    };
    const workers = Array.from({ length: Math.max(1, options.concurrency ?? 1) }, () => worker());
    const done = Promise.all(workers);
    return {
      stop: async () => {
        stopped = true;
        // Wake every idle worker of this consumer; busy ones finish their job first.
        for (const cancel of [...idle]) cancel();
        await done;
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
