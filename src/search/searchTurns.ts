import { DomainError } from '../domain/errors';
import { FairTurns, TurnAbandonedError, TurnQueueFullError } from '../util/fairTurns';

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

/**
 * Turns of the search index, shared fairly between workspaces (sixth hostile look). The index
 * answers one search at a time, first come first served: a tenant that sent a thousand searches
 * (through enough links, users or addresses to pass the rate limits) made every other tenant's
 * search wait for all of them, searches kept running after their clients had left, and once
 * 1,024 were queued everybody's were refused.
 *
 * At most `atOnce` searches run at once and one workspace holds at most half of them (at least
 * one), so another workspace's search always finds a turn that workspace cannot take; waiting
 * workspaces take turns (FairTurns, the mechanism the analytics folds use too). A search whose
 * client leaves while it waits gives up its place and never runs. At most `waitingPerKey`
 * searches of one workspace wait; past it that workspace's searches are refused
 * (503 SERVICE_UNAVAILABLE), and no other's.
 */
export class SearchTurns {
  readonly perKey: number;
  private readonly turns: FairTurns;

  constructor(
    readonly atOnce: number,
    readonly waitingPerKey: number,
  ) {
    this.perKey = Math.max(1, Math.ceil(atOnce / 2));
    this.turns = new FairTurns(atOnce, this.perKey, waitingPerKey);
  }

  /** Runs `work` in a turn of `key`; rejects without running it when refused or when `signal` aborts first. */
  async run<T>(key: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    try {
      return await this.turns.run(key, work, signal);
    } catch (err) {
      if (err instanceof TurnQueueFullError) throw searchBusy();
      if (err instanceof TurnAbandonedError) throw new SearchAbandoned();
      throw err;
    }
  }

  /** Searches running and waiting now (metrics, tests). */
  get load(): { running: number; waiting: number } {
    const { running, waiting } = this.turns.load;
    return { running, waiting };
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
