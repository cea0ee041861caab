import { DomainError } from '../domain/errors';

/** Seconds a refused search is told to wait before it tries again. */
export const SEARCH_BUSY_RETRY_AFTER_S = 1;

/** A search not run: refused by its turns (503 SERVICE_UNAVAILABLE). */
export class SearchRefused extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('SERVICE_UNAVAILABLE', message, details);
    this.name = 'SearchRefused';
  }
}

/** The error a search gets when its workspace already has its bound of searches waiting. */
export const searchBusy = (): SearchRefused => new SearchRefused('Too many searches of this workspace are waiting; retry shortly.', { retryAfter: SEARCH_BUSY_RETRY_AFTER_S });

/** The error a search gets when its client left before it ran (nobody reads it). */
export class SearchAbandoned extends SearchRefused {
  constructor() {
    super('The client left before the search ran.');
    this.name = 'SearchAbandoned';
  }
}

interface Waiter {
  key: string;
  begin: () => void;
}

/**
 * Turns of the search index, shared fairly between workspaces (sixth hostile look). The index
 * answers one search at a time, first come first served: a tenant that sent a thousand searches
 * (through enough links, users or addresses to pass the rate limits) made every other tenant's
 * search wait for all of them, searches kept running after their clients had left, and once
 * 1,024 were queued everybody's were refused.
 *
 * At most `atOnce` searches run at once and one workspace holds at most half of them (at least
 * one), so another workspace's search always finds a turn that workspace cannot take; waiting
 * searches start first come first served among workspaces under their share. A search whose
 * client leaves while it waits gives up its place and never runs. At most `waitingPerKey`
 * searches of one workspace wait; past it that workspace's searches are refused
 * (503 SERVICE_UNAVAILABLE), and no other's.
 */
export class SearchTurns {
  private running = 0;
  private readonly runningBy = new Map<string, number>();
  private readonly waitingBy = new Map<string, number>();
  private readonly waiting: Waiter[] = [];
  readonly perKey: number;

  constructor(
    readonly atOnce: number,
    readonly waitingPerKey: number,
  ) {
    this.perKey = Math.max(1, Math.ceil(atOnce / 2));
  }

  /** Runs `work` in a turn of `key`; rejects without running it when refused or when `signal` aborts first. */
  async run<T>(key: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.acquire(key, signal);
    try {
      return await work();
    } finally {
      this.release(key);
    }
  }

  private acquire(key: string, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(new SearchAbandoned());
    if (this.running < this.atOnce && (this.runningBy.get(key) ?? 0) < this.perKey) {
      this.take(key);
      return Promise.resolve();
    }
    if ((this.waitingBy.get(key) ?? 0) >= this.waitingPerKey) return Promise.reject(searchBusy());
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiting.indexOf(waiter);
        if (i < 0) return;
        this.waiting.splice(i, 1);
        this.unwait(key);
        reject(new SearchAbandoned());
      };
      const waiter: Waiter = {
        key,
        begin: () => {
          signal?.removeEventListener('abort', onAbort);
          this.unwait(key);
          this.take(key);
          resolve();
        },
      };
      this.waiting.push(waiter);
      this.waitingBy.set(key, (this.waitingBy.get(key) ?? 0) + 1);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private take(key: string): void {
    this.running += 1;
    this.runningBy.set(key, (this.runningBy.get(key) ?? 0) + 1);
  }

  private unwait(key: string): void {
    const n = (this.waitingBy.get(key) ?? 1) - 1;
    if (n > 0) this.waitingBy.set(key, n);
    else this.waitingBy.delete(key);
  }

  private release(key: string): void {
    this.running -= 1;
    const n = (this.runningBy.get(key) ?? 1) - 1;
    if (n > 0) this.runningBy.set(key, n);
    else this.runningBy.delete(key);
    while (this.running < this.atOnce) {
      const i = this.waiting.findIndex((w) => (this.runningBy.get(w.key) ?? 0) < this.perKey);
      if (i < 0) return;
      const [next] = this.waiting.splice(i, 1);
      next.begin();
    }
  }

  /** Searches running and waiting now (metrics, tests). */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }
}

const turnsOf = new WeakMap<object, SearchTurns>();

/** The search turns of one application (its context or dependencies object). */
export function searchTurns(ctx: { config?: { searchesAtOnce?: number; searchesWaitingPerWorkspace?: number } }): SearchTurns {
  let t = turnsOf.get(ctx);
  if (!t) {
    t = new SearchTurns(ctx.config?.searchesAtOnce ?? 4, ctx.config?.searchesWaitingPerWorkspace ?? 128);
    turnsOf.set(ctx, t);
  }
  return t;
}
