import { AppContext } from '../../src/app/context';
import { CommandContext, CommandResult, Decider, handleCommand } from '../../src/core/commandHandler';
import { DomainEvent } from '../../src/domain/event';

/** What running a command needs: the log to append to and the read models to wait for. */
export type RunCommandDeps = Pick<AppContext, 'eventStore' | 'runner' | 'config'>;

/**
 * Run a command through the one command handler, then wait (bounded) until the read models
 * have applied it, so the caller's next read sees its write (read-your-writes).
 */
export async function runCommand<S, C, E extends DomainEvent>(
  deps: RunCommandDeps,
  streamId: string,
  decider: Decider<S, C, E>,
  command: C,
  cc: CommandContext,
  options: { workspaceId?: string; retries?: number } = {},
): Promise<CommandResult<S, E>> {
  const result = await handleCommand(deps.eventStore, streamId, decider, command, cc, options);
  await deps.runner.waitFor(result.position, deps.config.readYourWritesMs);
  return result;
}
