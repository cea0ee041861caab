import { randomUUID } from 'node:crypto';
import { CommandContext } from '../../src/core/commandHandler';
import { SetActor } from '../../src/domain/instructionSet/decider';
import { runInstructionSetCommand } from './instructionSetCommands';
import { blankToNull, InstructionSetDeps } from './setInput';

export interface CreateInstructionSetInput {
  workspaceId: string;
  actor: SetActor;
  name: string;
  description?: string | null;
  isPublic?: boolean;
}

/** A new, empty instruction set; returns its id and state. */
export async function createInstructionSet(deps: InstructionSetDeps, cc: CommandContext, input: CreateInstructionSetInput) {
  const setId = randomUUID();
  const { workspaceId } = input;
  const r = await runInstructionSetCommand(deps, { ...cc, workspaceId }, setId, workspaceId, {
    type: 'CreateInstructionSet',
    setId,
    workspaceId,
    actor: input.actor,
    name: input.name.trim(),
    description: blankToNull(input.description) ?? null,
    isPublic: input.isPublic ?? false,
    now: cc.now,
  });
  return { id: setId, state: r.state };
}
