import { AppContext } from '../../src/app/context';
import { CommandContext, CommandResult, handleCommand, loadState } from '../../src/core/commandHandler';
import { DomainError } from '../../src/domain/errors';
import { InstructionSetCommand, instructionSetDecider, InstructionSetState } from '../../src/domain/instructionSet/decider';
import { InstructionSetEvent, instructionSetStream } from '../../src/domain/instructionSet/events';

/**
 * Limits are decided on the set's stream: concurrent writers race on its revision and the
 * loser re-decides on fresh state. Adds come in bursts, so allow more retries than usual.
 */
const RETRIES = 25;

/**
 * Run one command on an instruction set's stream and wait until the read models have
 * applied it (read-your-writes).
 */
export async function runInstructionSetCommand(
  ctx: Pick<AppContext, 'eventStore' | 'runner' | 'config'>,
  cc: CommandContext,
  setId: string,
  workspaceId: string,
  command: InstructionSetCommand,
  options: { waitForReadModels?: boolean } = {},
): Promise<CommandResult<InstructionSetState, InstructionSetEvent>> {
  const streamId = instructionSetStream(setId);
  let result: CommandResult<InstructionSetState, InstructionSetEvent>;
  try {
    result = await handleCommand(ctx.eventStore, streamId, instructionSetDecider, command, cc, { retries: RETRIES, workspaceId });
  } catch (err) {
    // Out of retries: still tell the client when the set last changed, as every CONFLICT does.
    if (err instanceof DomainError && err.code === 'CONFLICT' && err.details === undefined) {
      const { state } = await loadState(ctx.eventStore, streamId, instructionSetDecider);
      throw new DomainError('CONFLICT', err.message, { lastModifiedAt: state.updatedAt });
    }
    throw err;
  }
  if (options.waitForReadModels !== false) await ctx.runner.waitFor(result.position, ctx.config.readYourWritesMs);
  return result;
}
