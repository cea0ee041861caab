import { AppContext } from '../app/context';
import { DomainError } from '../domain/errors';
import { LogVerification } from '../ports/logVerifier';

/** How often one workspace's owners may verify the log, and how often the whole process does (per hour). */
export const VERIFY_LOG_PER_WORKSPACE_PER_HOUR = 10;
export const VERIFY_LOG_PER_PROCESS_PER_HOUR = 60;

/**
 * "Verify the log" for a workspace's owner: the whole hash chain is walked (it runs through
 * every workspace, so a workspace's part alone proves nothing about removals), and the answer
 * tells the owner whether it is intact and how many of the events walked are theirs.
 */
export async function verifyLogFor(ctx: Pick<AppContext, 'logVerifier'>, workspaceId: string): Promise<LogVerification> {
  if (!ctx.logVerifier) {
    throw new DomainError('LOG_VERIFICATION_UNAVAILABLE', 'This server keeps its log in an event store whose hash chain it cannot walk (verify the SQLite log with `kb verify`).');
  }
  return ctx.logVerifier.verify(workspaceId);
}
