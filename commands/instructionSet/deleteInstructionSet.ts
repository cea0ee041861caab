import { CommandContext } from '../../src/core/commandHandler';
import { SetActor } from '../../src/domain/instructionSet/decider';
import { runInstructionSetCommand } from './instructionSetCommands';
import { InstructionSetDeps, SetRef } from './setInput';

/** Delete a set (its public page goes with it). */
export async function deleteInstructionSet(deps: InstructionSetDeps, cc: CommandContext, set: SetRef, actor: SetActor): Promise<void> {
  await runInstructionSetCommand(deps, { ...cc, workspaceId: set.workspaceId }, set.id, set.workspaceId, { type: 'DeleteInstructionSet', actor, now: cc.now });
}
