import { CommandPorts } from '../../src/core/executeCommand';
import { Purpose } from '../../src/domain/document/events';
import { Role } from '../../src/domain/workspace/events';
import { ReadStore } from '../../src/ports/readStore';
import { DocumentActor, runDocumentCommand } from './documentCommand';
import { requireKnownTags } from './documentRules';

export type UpdateDocumentMetadataPorts = CommandPorts & { readStore: ReadStore };

export interface DocumentMetadataChange {
  actor: DocumentActor;
  actorRole: Role;
  documentId: string;
  title?: string;
  purpose?: Purpose;
  tags?: string[];
}

/** Title, purpose and tags of a document; new tags must be tags of its workspace. */
export async function updateDocumentMetadata(ports: UpdateDocumentMetadataPorts, input: DocumentMetadataChange): Promise<void> {
  const { actor } = input;
  if (input.tags) await requireKnownTags(ports.readStore, actor.workspaceId, input.tags);
  await runDocumentCommand(ports, actor, input.documentId, {
    type: 'UpdateDocumentMetadata',
    actorId: actor.actorId,
    actorRole: input.actorRole,
    workspaceId: actor.workspaceId,
    title: input.title?.trim(),
    purpose: input.purpose,
    tags: input.tags,
    now: actor.now,
  });
}
