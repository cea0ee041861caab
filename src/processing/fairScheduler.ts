/**
 * Runs tasks with at most `concurrency` at once and at most `perGroup` of one group (a
 * workspace) at once. Waiting tasks are taken round-robin across groups, not first come:
 * the group served longest ago goes first, each group's own tasks in order. So one
 * workspace with a thousand queued documents delays another workspace's first document by
 * at most the runs already in progress, and never holds every slot when `perGroup` is
 * smaller than `concurrency`.
 */

export interface FairSchedulerOptions {
  concurrency: number;
  perGroup: number;
}

interface Task {
  run: () => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/** The scheduler was closed before the task started. */
export class SchedulerClosedError extends Error {
  constructor() {
    super('scheduler closed');
    this.name = 'SchedulerClosedError';
  }
}

export class FairScheduler {
  /** Waiting tasks per group. */
  private readonly waiting = new Map<string, Task[]>();
  /** When each active group was last served (a counter); a group never served goes first. */
  private readonly lastServed = new Map<string, number>();
  private serves = 0;
  private readonly runningByGroup = new Map<string, number>();
  private running = 0;
  private queued = 0;
  private closed = false;
  private readonly idleWaiters = new Set<() => void>();

  constructor(private readonly options: FairSchedulerOptions) {
    if (!(options.concurrency >= 1) || !(options.perGroup >= 1)) throw new RangeError('concurrency and perGroup must be at least 1');
  }

  /** Tasks waiting for a slot. */
  get waitingCount(): number {
    return this.queued;
  }

  /** Tasks running now, in total or of one group. */
  runningCount(group?: string): number {
    return group === undefined ? this.running : (this.runningByGroup.get(group) ?? 0);
  }

  /** Runs `task` when a slot is free for `group`; settles as the task does. */
  submit<T>(group: string, task: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new SchedulerClosedError());
    return new Promise<T>((resolve, reject) => {
      const queue = this.waiting.get(group);
      const entry: Task = { run: task, resolve: resolve as (v: unknown) => void, reject };
      if (queue) queue.push(entry);
      else this.waiting.set(group, [entry]);
      this.queued += 1;
      this.pump();
    });
  }

  /** Rejects every waiting task with SchedulerClosedError; running ones finish. */
  close(): void {
    this.closed = true;
    for (const queue of this.waiting.values()) for (const t of queue) t.reject(new SchedulerClosedError());
    this.waiting.clear();
    this.lastServed.clear();
    this.queued = 0;
    this.notifyIdle();
  }

  /** Resolves once no task is running or waiting. */
  idle(): Promise<void> {
    if (this.running === 0 && this.queued === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.add(resolve));
  }

  private pump(): void {
    while (this.running < this.options.concurrency) {
      const group = this.nextGroup();
      if (group === undefined) return;
      const queue = this.waiting.get(group) as Task[];
      const task = queue.shift() as Task;
      this.queued -= 1;
      if (queue.length === 0) this.waiting.delete(group);
      this.lastServed.set(group, ++this.serves);
      this.start(group, task);
    }
  }

  /** The group under its cap that was served longest ago (ties: the one waiting longest). */
  private nextGroup(): string | undefined {
    let best: string | undefined;
    let bestServed = Infinity;
    for (const group of this.waiting.keys()) {
      if ((this.runningByGroup.get(group) ?? 0) >= this.options.perGroup) continue;
      const served = this.lastServed.get(group) ?? -1;
      if (served < bestServed) {
        best = group;
        bestServed = served;
      }
    }
    return best;
  }

  private start(group: string, task: Task): void {
    this.running += 1;
    this.runningByGroup.set(group, (this.runningByGroup.get(group) ?? 0) + 1);
    const done = (): void => {
      this.running -= 1;
      const n = (this.runningByGroup.get(group) ?? 1) - 1;
      if (n > 0) this.runningByGroup.set(group, n);
      else this.runningByGroup.delete(group);
      if (n <= 0 && !this.waiting.has(group)) this.lastServed.delete(group); // idle: forget it
      this.pump();
      this.notifyIdle();
    };
    let p: Promise<unknown>;
    try {
      p = task.run();
    } catch (err) {
      p = Promise.reject(err);
    }
    p.then(
      (v) => {
        done();
        task.resolve(v);
      },
      (err: unknown) => {
        done();
        task.reject(err);
      },
    );
  }

  private notifyIdle(): void {
    if (this.running !== 0 || this.queued !== 0) return;
    for (const w of [...this.idleWaiters]) w();
    this.idleWaiters.clear();
  }
}
