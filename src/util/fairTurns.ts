/** FairTurns.run's refusal: the owner already has as many jobs waiting as it may. */
export class TurnQueueFullError extends Error {
  constructor(readonly owner: string) {
    super('too many jobs of this owner waiting');
    this.name = 'TurnQueueFullError';
  }
}

/** FairTurns.run's refusal: the job's signal was aborted before its turn came. */
export class TurnAbandonedError extends Error {
  constructor() {
    super('gave up its place before its turn');
    this.name = 'TurnAbandonedError';
  }
}

interface Waiting {
  begin: () => void;
  abandon: () => void;
}

/**
 * Runs async jobs at most `atOnce` at a time, and at most `perOwner` of one owner at a time,
 * taking turns between owners: when a turn frees, the owner waiting longest since its last
 * turn goes next (round robin over owners, first come first served within one), so one
 * owner's many jobs hold another's for at most the jobs running when it asks. Each owner
 * may have `maxWaitingPerOwner` jobs waiting; past that `run` rejects at once with
 * TurnQueueFullError (the caller answers 429). State is in Maps keyed by owner.
 */
export class FairTurns {
  private running = 0;
  private readonly runningBy = new Map<string, number>();
  /** Waiting jobs by owner; the Map's order is the owners' order of turns. */
  private readonly waiting = new Map<string, Waiting[]>();

  constructor(
    readonly atOnce: number,
    readonly perOwner: number,
    readonly maxWaitingPerOwner: number,
  ) {
    if (!(atOnce >= 1 && perOwner >= 1 && maxWaitingPerOwner >= 0)) throw new Error('FairTurns: atOnce and perOwner must be at least 1');
  }

  /**
   * Runs `fn` in `owner`'s turn. Rejects with TurnQueueFullError when the owner's queue is
   * full, and with TurnAbandonedError when `signal` aborts while it waits (its place is given up).
   */
  run<T>(owner: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(new TurnAbandonedError());
    return new Promise<T>((resolve, reject) => {
      const begin = () => {
        signal?.removeEventListener('abort', onAbort);
        this.running += 1;
        this.runningBy.set(owner, (this.runningBy.get(owner) ?? 0) + 1);
        let result: Promise<T>;
        try {
          result = fn();
        } catch (err) {
          result = Promise.reject(err);
        }
        // The turn ends before the caller hears: what it does next sees the turn free.
        result.then(
          (value) => {
            this.end(owner);
            resolve(value);
          },
          (err: unknown) => {
            this.end(owner);
            reject(err);
          },
        );
      };
      const entry: Waiting = { begin, abandon: () => reject(new TurnAbandonedError()) };
      const onAbort = () => {
        const queue = this.waiting.get(owner);
        const i = queue ? queue.indexOf(entry) : -1;
        if (i < 0) return;
        queue!.splice(i, 1);
        if (queue!.length === 0) this.waiting.delete(owner);
        entry.abandon();
      };
      if (this.waiting.size === 0 && this.canStart(owner)) {
        begin();
        return;
      }
      const queue = this.waiting.get(owner) ?? [];
      if (queue.length >= this.maxWaitingPerOwner) {
        reject(new TurnQueueFullError(owner));
        return;
      }
      queue.push(entry);
      if (!this.waiting.has(owner)) this.waiting.set(owner, queue);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.startWaiting();
    });
  }

  /** Jobs running and waiting now (for tests and metrics). */
  get load(): { running: number; waiting: number; owners: number } {
    let waiting = 0;
    for (const q of this.waiting.values()) waiting += q.length;
    return { running: this.running, waiting, owners: this.waiting.size };
  }

  private canStart(owner: string): boolean {
    return this.running < this.atOnce && (this.runningBy.get(owner) ?? 0) < this.perOwner;
  }

  private end(owner: string): void {
    this.running -= 1;
    const held = (this.runningBy.get(owner) ?? 1) - 1;
    if (held > 0) this.runningBy.set(owner, held);
    else this.runningBy.delete(owner);
    // Its next job waits for the other owners' turns: to the end of the order.
    const queue = this.waiting.get(owner);
    if (queue) {
      this.waiting.delete(owner);
      this.waiting.set(owner, queue);
    }
    this.startWaiting();
  }

  /** Starts waiting jobs while turns are free: the first owner in turn order that may run one; its turn moves to the end. */
  private startWaiting(): void {
    while (this.running < this.atOnce) {
      let next: string | undefined;
      for (const owner of this.waiting.keys()) {
        if (this.canStart(owner)) {
          next = owner;
          break;
        }
      }
      if (next === undefined) return;
      const queue = this.waiting.get(next)!;
      this.waiting.delete(next);
      const job = queue.shift()!;
      if (queue.length > 0) this.waiting.set(next, queue);
      job.begin();
    }
  }
}
