import { CommandContext } from '../../src/core/commandHandler';
import { SetActor } from '../../src/domain/instructionSet/decider';
import { runInstructionSetCommand } from './instructionSetCommands';
import { blankToNull, InstructionSetDeps, SetRef } from './setInput';

export interface UpdateInstructionSetInput {
  name?: string;
  description?: string | null;
  isPublic?: boolean;
  /** Optimistic concurrency: refused with CONFLICT when the set changed since. */
  expectedUpdatedAt?: string;
}

/** Rename, describe, publish or unpublish a set; returns its new state. */
export async function updateInstructionSet(deps: InstructionSetDeps, cc: CommandContext, set: SetRef, actor: SetActor, input: UpdateInstructionSetInput) {
  const r = await runInstructionSetCommand(deps, { ...cc, workspaceId: set.workspaceId }, set.id, set.workspaceId, {
    type: 'UpdateInstructionSet',
    actor,
    name: input.name?.trim(),
    description: blankToNull(input.description),
    isPublic: input.isPublic,
    expectedUpdatedAt: input.expectedUpdatedAt,
    now: cc.now,
  });
  return r.state;
}
