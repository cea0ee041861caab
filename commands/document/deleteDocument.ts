import { Logger } from 'pino';
import { CommandPorts } from '../../src/core/executeCommand';
import { Role } from '../../src/domain/workspace/events';
import { BlobStore } from '../../src/ports/blobStore';
import { ReadStore } from '../../src/ports/readStore';
import { DocumentActor, runDocumentCommand } from './documentCommand';
import { deleteBlobIfUnused } from './documentRules';

export type DeleteDocumentPorts = CommandPorts & { readStore: ReadStore; blobStore: BlobStore; logger: Pick<Logger, 'warn'> };

/** Delete a document; its stored file goes too once no other document uses the same bytes. */
export async function deleteDocument(ports: DeleteDocumentPorts, input: { actor: DocumentActor; actorRole: Role; documentId: string }): Promise<void> {
  const { actor, documentId } = input;
  const r = await runDocumentCommand(ports, actor, documentId, { type: 'DeleteDocument', actorId: actor.actorId, actorRole: input.actorRole, workspaceId: actor.workspaceId, now: actor.now });
  const e = r.events[0];
  if (e?.type === 'DocumentDeleted') {
    await deleteBlobIfUnused(ports, e.data.blobSha256).catch((err: unknown) => ports.logger.warn({ err, documentId }, 'blob delete failed'));
  }
}
