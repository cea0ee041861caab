import { ConsumeOptions, Job, JobConsumer, JobHandler, JobQueue } from '../../ports/jobQueue';
import { DEFAULT_MAX_ATTEMPTS, HandledJobs, InMemoryHandledJobs, decideOnFailure, defaultRetryDelay } from '../jobRetry';

export interface DeadLetter {
  job: Job;
  error: unknown;
  attempts: number;
}

/** Jobs without a group share this one. */
const NO_GROUP = '';

interface ConsumerState {
  stopped: boolean;
  maxPerGroup: number;
  /** Idle workers of this consumer, waiting for a job. */
  idle: ((job: Job | null) => void)[];
  running: Map<string, number>;
}

/**
 * JobQueue inside one process (the embedded default): competing consumers, retries with
 * backoff, a dead-letter list, and de-duplication by job id (an id queued, running or
 * handled is not queued again). Fair by group: waiting jobs are taken round-robin across
 * groups (the group served longest ago first, each group's jobs in order), and a consumer
 * runs at most `maxPerGroup` jobs of one group at once.
 */
export class InProcessJobQueue implements JobQueue {
  /** Waiting jobs per group. */
  private readonly pending = new Map<string, Job[]>();
  /** When each group with waiting jobs was last served (a counter); never served goes first. */
  private readonly lastServed = new Map<string, number>();
  private serves = 0;
  private readonly known = new Set<string>();
  private readonly consumers: ConsumerState[] = [];
  private readonly dead: DeadLetter[] = [];
  private closed = false;

  constructor(private readonly handled: HandledJobs = new InMemoryHandledJobs()) {}

  async enqueue(job: Job): Promise<void> {
    if (this.closed) throw new Error('job queue is closed');
    if (this.known.has(job.id) || (await this.handled.has(job.id))) return;
    this.known.add(job.id);
    const group = job.group ?? NO_GROUP;
    const queue = this.pending.get(group);
    if (queue) queue.push(job);
    else this.pending.set(group, [job]);
    this.dispatch();
  }

  /** Gives waiting jobs to idle workers, fairly, within each consumer's per-group cap. */
  private dispatch(): void {
    for (let progress = true; progress; ) {
      progress = false;
      for (const consumer of this.consumers) {
        if (consumer.stopped || consumer.idle.length === 0) continue;
        const group = this.nextGroup(consumer);
        if (group === undefined) continue;
        const queue = this.pending.get(group) as Job[];
        const job = queue.shift() as Job;
        this.lastServed.set(group, ++this.serves);
        if (queue.length === 0) this.pending.delete(group);
        consumer.running.set(group, (consumer.running.get(group) ?? 0) + 1);
        (consumer.idle.shift() as (job: Job | null) => void)(job);
        progress = true;
      }
    }
  }

  /** The group under the consumer's cap that was served longest ago (ties: waiting longest). */
  private nextGroup(consumer: ConsumerState): string | undefined {
    let best: string | undefined;
    let bestServed = Infinity;
    for (const group of this.pending.keys()) {
      if ((consumer.running.get(group) ?? 0) >= consumer.maxPerGroup) continue;
      const served = this.lastServed.get(group) ?? -1;
      if (served < bestServed) {
        best = group;
        bestServed = served;
      }
    }
    // Forget groups with nothing waiting: the map stays as small as the backlog.
    for (const group of this.lastServed.keys()) if (!this.pending.has(group) && group !== best) this.lastServed.delete(group);
    return best;
  }

  /** Jobs that failed every attempt, oldest first. */
  deadLetters(): DeadLetter[] {
    return [...this.dead];
  }

  async consume(handler: JobHandler, options: ConsumeOptions = {}): Promise<JobConsumer> {
    const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    const retryDelayMs = options.retryDelayMs ?? defaultRetryDelay;
    const concurrency = Math.max(1, options.concurrency ?? 1);
    const state: ConsumerState = { stopped: false, maxPerGroup: Math.max(1, options.maxPerGroup ?? concurrency), idle: [], running: new Map() };
    this.consumers.push(state);
    const next = (): Promise<Job | null> =>
      new Promise((resolve) => {
        state.idle.push(resolve);
        this.dispatch();
      });
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
      while (!state.stopped) {
        const job = await next();
        if (!job) return;
        const group = job.group ?? NO_GROUP;
        try {
          await handle(job);
        } finally {
          const n = (state.running.get(group) ?? 1) - 1;
          if (n > 0) state.running.set(group, n);
          else state.running.delete(group);
          this.dispatch();
        }
      }
    };
    const done = Promise.all(Array.from({ length: concurrency }, () => worker()));
    return {
      stop: async () => {
        state.stopped = true;
        // Wake every idle worker of this consumer; busy ones finish their job first.
        for (const wake of state.idle.splice(0)) wake(null);
        await done;
        const i = this.consumers.indexOf(state);
        if (i >= 0) this.consumers.splice(i, 1);
        this.dispatch();
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
