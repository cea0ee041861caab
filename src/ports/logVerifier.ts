/** Where the log's hash chain first fails, as far as the asking workspace may see it. */
export interface LogChainBreak {
  position: number;
  reason: string;
  /** The broken event belongs to the asking workspace: its id and type are shown; otherwise they stay hidden. */
  inThisWorkspace: boolean;
  id?: string;
  type?: string;
}

export interface LogVerification {
  ok: boolean;
  /** Events walked (the whole log up to its head when it was read). */
  checked: number;
  /** Of those, the events of the asking workspace. */
  workspaceEvents: number;
  headPosition: number;
  firstBreak: LogChainBreak | null;
  startedAt: string;
  finishedAt: string;
}

/**
 * Recomputes the event log's hash chain from the stored bytes. The chain runs through every
 * workspace's events, so only a walk of the whole log proves that nothing was edited, inserted
 * or removed; the answer reports a break in words fit for one workspace's owner (another
 * workspace's event is named by position only). Adapters walk in batches without blocking the
 * process, and run one walk at a time (concurrent callers share it).
 */
export interface LogVerifier {
  verify(workspaceId: string): Promise<LogVerification>;
}

export const LOG_VERIFIER = Symbol('LOG_VERIFIER');
