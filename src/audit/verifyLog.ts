import { AppContext } from '../app/context';
import { DomainError } from '../domain/errors';
import { LogVerification, LogVerifier } from '../ports/logVerifier';

/** How often one workspace's owners may verify the log, and how often one user may (per hour). */
export const VERIFY_LOG_PER_WORKSPACE_PER_HOUR = 10;
export const VERIFY_LOG_PER_USER_PER_HOUR = 30;
/**
 * Walks of the whole log use at most 1 / (1 + WALK_GAP_FACTOR) of the time (while walks are
 * shorter than WALK_GAP_MAX_MS / WALK_GAP_FACTOR): the next walk starts no sooner than
 * WALK_GAP_FACTOR times the last walk's duration after it ended.
 */
export const WALK_GAP_FACTOR = 9;
/** The gap never exceeds this (ms): a request waits at most this long plus a walk. */
export const WALK_GAP_MAX_MS = 30_000;

/**
 * The whole-log walks of one verifier, paced: a walk starts when none has run for
 * WALK_GAP_FACTOR × the last one's duration, and every request waiting by then shares it
 * (a request arriving during a walk joins it: the verifier shares a walk with concurrent
 * callers). So the walks' share of the machine is bounded however many tenants ask, and no
 * tenant's requests can use up a budget of the server's and leave the others refused (as a
 * count of walks per server per hour did); each tenant is bounded by its own hourly limits.
 */
export class PacedLogVerifier implements LogVerifier {
  /** When the last walk ended, and how long it took (ms, by `clock`). */
  private lastEnd = -Infinity;
  private lastDuration = 0;
  /** The start of the next walk, shared by the requests waiting for it. */
  private scheduled: Promise<void> | null = null;
  /** Callers in the walk running (they share it), and when it started. */
  private running = 0;
  private walkStart = 0;

  constructor(
    private readonly inner: LogVerifier,
    private readonly clock: () => number = () => performance.now(),
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  ) {}

  async verify(workspaceId: string): Promise<LogVerification> {
    // During a walk, join it; else wait out the gap after the last one, with everybody else waiting.
    if (this.running === 0) {
      if (!this.scheduled) {
        const wait = Math.max(0, this.lastEnd + Math.min(WALK_GAP_MAX_MS, WALK_GAP_FACTOR * this.lastDuration) - this.clock());
        this.scheduled = (wait > 0 ? this.sleep(wait) : Promise.resolve()).then(() => {
          this.scheduled = null;
        });
      }
      await this.scheduled;
    }
    if (this.running === 0) this.walkStart = this.clock();
    this.running += 1;
    try {
      return await this.inner.verify(workspaceId);
    } finally {
      this.running -= 1;
      if (this.running === 0) {
        // The walk (and every caller sharing it) is over.
        this.lastEnd = this.clock();
        this.lastDuration = this.lastEnd - this.walkStart;
      }
    }
  }
}

const paced = new WeakMap<LogVerifier, PacedLogVerifier>();

/**
 * "Verify the log" for a workspace's owner: the whole hash chain is walked (it runs through
 * every workspace, so a workspace's part alone proves nothing about removals), and the answer
 * tells the owner whether it is intact and how many of the events walked are theirs. Walks
 * are paced (PacedLogVerifier).
 */
export async function verifyLogFor(ctx: Pick<AppContext, 'logVerifier'>, workspaceId: string): Promise<LogVerification> {
  if (!ctx.logVerifier) {
    throw new DomainError('LOG_VERIFICATION_UNAVAILABLE', 'This server keeps its log in an event store whose hash chain it cannot walk (verify the SQLite log with `kb verify`).');
  }
  let verifier = paced.get(ctx.logVerifier);
  if (!verifier) paced.set(ctx.logVerifier, (verifier = new PacedLogVerifier(ctx.logVerifier)));
  return verifier.verify(workspaceId);
}
