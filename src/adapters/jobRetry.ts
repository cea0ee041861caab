import { Job, PoisonMessageError } from '../ports/jobQueue';
import { Collection, ReadStore } from '../ports/readStore';

export { PoisonMessageError };

export type FailureDecision = { kind: 'retry'; delayMs: number } | { kind: 'dead-letter'; reason: string };

export const DEFAULT_MAX_ATTEMPTS = 5;

/** 500 ms, 1 s, 2 s, ... capped at 30 s. */
export function defaultRetryDelay(attempt: number): number {
  return Math.min(30_000, 500 * 2 ** Math.max(0, attempt - 1));
}

/** What to do after the `attempt`-th failure (1-based) of a job. */
export function decideOnFailure(
  attempt: number,
  error: unknown,
  maxAttempts = DEFAULT_MAX_ATTEMPTS,
  retryDelayMs: (attempt: number) => number = defaultRetryDelay,
): FailureDecision {
  if (error instanceof PoisonMessageError) return { kind: 'dead-letter', reason: `poison message: ${error.message}` };
  if (attempt >= maxAttempts) return { kind: 'dead-letter', reason: `failed ${attempt} times: ${errorMessage(error)}` };
  return { kind: 'retry', delayMs: Math.max(0, retryDelayMs(attempt)) };
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Decodes a job from a queue message, refusing anything that is not one. */
export function decodeJob(raw: string | Buffer | null | undefined): Job {
  if (raw === null || raw === undefined) throw new PoisonMessageError('empty message');
  let value: unknown;
  try {
    value = JSON.parse(raw.toString());
  } catch {
    throw new PoisonMessageError('message is not JSON');
  }
  if (typeof value !== 'object' || value === null) throw new PoisonMessageError('message is not an object');
  const { id, type, payload, group } = value as Record<string, unknown>;
  if (typeof id !== 'string' || !id) throw new PoisonMessageError('job has no id');
  if (typeof type !== 'string' || !type) throw new PoisonMessageError('job has no type');
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw new PoisonMessageError('job payload is not an object');
  if (group !== undefined && typeof group !== 'string') throw new PoisonMessageError('job group is not a string');
  return group === undefined ? { id, type, payload: payload as Record<string, unknown> } : { id, type, payload: payload as Record<string, unknown>, group };
}

export function encodeJob(job: Job): string {
  return JSON.stringify({ id: job.id, type: job.type, payload: job.payload, ...(job.group !== undefined ? { group: job.group } : {}) });
}

/** Remembers handled job ids, for idempotent handling. */
export interface HandledJobs {
  has(id: string): Promise<boolean>;
  add(id: string): Promise<void>;
}

/** In-memory, bounded (oldest ids forgotten first): covers redeliveries within one process. */
export class InMemoryHandledJobs implements HandledJobs {
  private readonly ids = new Set<string>();
  constructor(private readonly capacity = 100_000) {}
  async has(id: string): Promise<boolean> {
    return this.ids.has(id);
  }
  async add(id: string): Promise<void> {
    this.ids.add(id);
    if (this.ids.size > this.capacity) {
      const oldest = this.ids.values().next().value;
      if (oldest !== undefined) this.ids.delete(oldest);
    }
  }
}

/** Handled job ids in a read-store collection, shared by every worker (MongoDB in production). */
export class ReadStoreHandledJobs implements HandledJobs {
  private readonly coll: Collection<{ id: string }>;
  constructor(store: ReadStore, collection = 'handled_jobs') {
    this.coll = store.collection<{ id: string }>(collection);
  }
  async has(id: string): Promise<boolean> {
    return (await this.coll.get(id)) !== null;
  }
  async add(id: string): Promise<void> {
    await this.coll.put({ id });
  }
}
