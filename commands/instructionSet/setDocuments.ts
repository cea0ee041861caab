import { CommandContext } from '../../src/core/commandHandler';
import { DocumentSnapshot, SetActor } from '../../src/domain/instructionSet/decider';
import { documentSizeBytes, findDocument, InstructionSetView, pendingGrowth } from '../../queries/instructionSet/instructionSetQueries';
import { runInstructionSetCommand } from './instructionSetCommands';
import { InstructionSetDeps, SetRef } from './setInput';
import { isUuid } from '../../src/domain/ids';

const isId = (s: string): boolean => isUuid(s);

/**
 * Add a document to a set. The decider judges the document as it is now (a snapshot: its
 * workspace, status, size) and the set's limit counting auto-saves still in flight.
 * Returns the entry and its place in the set.
 */
export async function addSetDocument(deps: InstructionSetDeps, cc: CommandContext, set: Pick<InstructionSetView, 'id' | 'workspaceId' | 'documents'>, actor: SetActor, input: { documentId: string }) {
  // Not a UUID: no document of that name, without a lookup.
  const documentId = isId(input.documentId) ? input.documentId.toLowerCase() : input.documentId;
  const doc = isId(documentId) ? await findDocument(deps, documentId) : null;
  const snapshot: DocumentSnapshot | null = doc
    ? { documentId: doc.id, workspaceId: doc.workspaceId, title: doc.title, purpose: doc.purpose, processingStatus: doc.processingStatus, sizeBytes: await documentSizeBytes(deps, doc) }
    : null;
  const pendingGrowthBytes = await pendingGrowth(deps, set.documents);
  const r = await runInstructionSetCommand(deps, { ...cc, workspaceId: set.workspaceId }, set.id, set.workspaceId, { type: 'AddSetDocument', actor, documentId, document: snapshot, now: cc.now, pendingGrowthBytes });
  const order = r.state.documents.findIndex((d) => d.documentId === documentId);
  return { entry: r.state.documents[order], order };
}

/** Put a set's documents in the given order; returns the new order. */
export async function reorderSetDocuments(deps: InstructionSetDeps, cc: CommandContext, set: SetRef, actor: SetActor, input: { documentIds: string[] }) {
  const r = await runInstructionSetCommand(deps, { ...cc, workspaceId: set.workspaceId }, set.id, set.workspaceId, { type: 'ReorderSetDocuments', actor, documentIds: input.documentIds, now: cc.now });
  return r.state.documents.map((d) => d.documentId);
}

export async function removeSetDocument(deps: InstructionSetDeps, cc: CommandContext, set: SetRef, actor: SetActor, documentId: string): Promise<void> {
  await runInstructionSetCommand(deps, { ...cc, workspaceId: set.workspaceId }, set.id, set.workspaceId, { type: 'RemoveSetDocument', actor, documentId, reason: 'removed', now: cc.now });
}
