import { randomUUID } from 'node:crypto';
import { CommandContext } from '../../src/core/commandHandler';
import { DomainError } from '../../src/domain/errors';
import { tagOf } from '../../queries/workspace/workspaceQueries';
import { CommandPorts } from '../../src/core/executeCommand';
import { actorOf, runWorkspaceCommand, WorkspaceDeps } from './runWorkspaceCommand';

/** A new tag of a workspace; names are trimmed, colours lower-cased. */
export async function createTag(deps: CommandPorts, cc: CommandContext, workspaceId: string, input: { name: string; color: string }) {
  const tagId = randomUUID();
  const name = input.name.trim();
  const color = input.color.toLowerCase();
  await runWorkspaceCommand(deps, cc, workspaceId, { type: 'CreateTag', actorId: actorOf(cc), tagId, name, color });
  return { id: tagId, name, color };
}

/** Rename or recolour a tag; returns the tag. */
export async function updateTag(deps: WorkspaceDeps, cc: CommandContext, workspaceId: string, tagId: string, input: { name?: string; color?: string }) {
  await runWorkspaceCommand(deps, cc, workspaceId, { type: 'UpdateTag', actorId: actorOf(cc), tagId, name: input.name?.trim(), color: input.color?.toLowerCase() });
  const tag = await tagOf(deps, workspaceId, tagId);
  if (!tag) throw new DomainError('TAG_NOT_FOUND', 'Tag not found.');
  return tag;
}

export async function deleteTag(deps: CommandPorts, cc: CommandContext, workspaceId: string, tagId: string): Promise<void> {
  await runWorkspaceCommand(deps, cc, workspaceId, { type: 'DeleteTag', actorId: actorOf(cc), tagId });
}
