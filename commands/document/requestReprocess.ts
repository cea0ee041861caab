import { randomUUID } from 'node:crypto';
import { CommandPorts } from '../../src/core/executeCommand';
import { Role } from '../../src/domain/workspace/events';
import { DocumentActor, runDocumentCommand } from './documentCommand';

/** Run extraction and embedding of a document again. */
export async function requestReprocess(ports: CommandPorts, input: { actor: DocumentActor; actorRole: Role; documentId: string }): Promise<void> {
  const { actor } = input;
  await runDocumentCommand(ports, actor, input.documentId, {
    type: 'RequestReprocess',
    actorId: actor.actorId,
    actorRole: input.actorRole,
    workspaceId: actor.workspaceId,
    processingId: randomUUID(),
    now: actor.now,
  });
}
