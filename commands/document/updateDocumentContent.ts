import { randomUUID } from 'node:crypto';
import { loadState } from '../../src/core/commandHandler';
import { CommandPorts } from '../../src/core/executeCommand';
import { DocumentCommand, documentDecider, DocumentState } from '../../src/domain/document/decider';
import { documentStream } from '../../src/domain/document/events';
import { DomainError } from '../../src/domain/errors';
import { Role } from '../../src/domain/workspace/events';
import { DocumentActor, runDocumentCommand } from './documentCommand';

/** How far new content would take an instruction set holding the document past its byte limit. */
export interface SetSizeBreach {
  currentSize: number;
  documentSize: number;
  maxSize: number;
  instructionSetId: string;
}

export type UpdateDocumentContentPorts = CommandPorts & {
  /** The first instruction set holding the document that this content would take past its limit, if any. */
  setSizeBreach(documentId: string, content: string): Promise<SetSizeBreach | null>;
};

export interface DocumentContentChange {
  actor: DocumentActor;
  actorRole: Role;
  documentId: string;
  content: string;
  expectedUpdatedAt?: string;
}

/** Auto-save: new text content for a text document; processing starts again on it. */
export async function updateDocumentContent(ports: UpdateDocumentContentPorts, input: DocumentContentChange): Promise<DocumentState> {
  const { actor } = input;
  const command: DocumentCommand = {
    type: 'UpdateDocumentContent',
    actorId: actor.actorId,
    actorRole: input.actorRole,
    workspaceId: actor.workspaceId,
    content: input.content,
    expectedUpdatedAt: input.expectedUpdatedAt,
    processingId: randomUUID(),
    now: actor.now,
  };
  // Instruction sets holding the document must stay within their byte limit, measured on an
  // upper bound of the text the new content will extract to.
  const breach = await ports.setSizeBreach(input.documentId, input.content);
  if (breach) {
    // The document's own refusals (not editable, DOCUMENT_LOCKED, ...) come first.
    documentDecider.decide(command, (await loadState(ports.eventStore, documentStream(input.documentId), documentDecider)).state);
    throw new DomainError('SIZE_LIMIT_EXCEEDED', `This content would pass the ${breach.maxSize}-byte limit of an instruction set holding the document.`, { ...breach });
  }
  return (await runDocumentCommand(ports, actor, input.documentId, command)).state;
}
