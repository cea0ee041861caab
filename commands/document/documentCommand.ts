import { CommandContext } from '../../src/core/commandHandler';
import { CommandPorts, executeCommand } from '../../src/core/executeCommand';
import { DocumentCommand, documentDecider } from '../../src/domain/document/decider';
import { documentStream } from '../../src/domain/document/events';

/** Who asks, and in which workspace: document commands always come from a signed-in user. */
export type DocumentActor = CommandContext & { actorId: string; workspaceId: string };

/** A command on one document's stream, through the one command handler (read-your-writes included). */
export function runDocumentCommand(ports: CommandPorts, actor: DocumentActor, documentId: string, command: DocumentCommand) {
  return executeCommand(ports, documentStream(documentId), documentDecider, command, actor, { workspaceId: actor.workspaceId });
}
