import { Projection, readModelProjection } from '../../src/core/projection';
import { ReadStore } from '../../src/ports/readStore';
import { InstructionSetEvent, SetEntry } from '../../src/domain/instructionSet/events';
import { Purpose } from '../../src/domain/workspace/events';

/** An instruction set as it is read: entries in set order, with totals kept alongside. */
export interface InstructionSetView {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  isPublic: boolean;
  documents: SetEntry[];
  /** The entries' ids, for "which sets hold this document" ($contains). */
  documentIds: string[];
  documentCount: number;
  totalSizeBytes: number;
  createdAt: string;
  updatedAt: string;
}

export const instructionSetsCollection = (s: ReadStore) =>
  s.collection<InstructionSetView>('instruction_sets', [{ fields: ['workspaceId'] }, { fields: ['isPublic'] }]);

/** Document events this read model reacts to (owned by the documents feature). */
type DocumentDeleted = { type: 'DocumentDeleted'; data: { documentId: string; workspaceId: string } };
type DocumentMetadataUpdated = { type: 'DocumentMetadataUpdated'; data: { documentId: string; workspaceId?: string; title?: string; purpose?: Purpose } };
type WorkspaceDeleted = { type: 'WorkspaceDeleted'; data: { workspaceId: string } };
type Handled = InstructionSetEvent | DocumentDeleted | DocumentMetadataUpdated | WorkspaceDeleted;

function withDocuments(v: InstructionSetView, documents: SetEntry[]): InstructionSetView {
  return {
    ...v,
    documents,
    documentIds: documents.map((d) => d.documentId),
    documentCount: documents.length,
    totalSizeBytes: documents.reduce((n, d) => n + d.sizeBytes, 0),
  };
}

export function instructionSetProjection(store: ReadStore): Projection {
  const sets = instructionSetsCollection(store);
  const update = async (id: string, f: (v: InstructionSetView) => InstructionSetView) => {
    const v = await sets.get(id);
    if (v) await sets.put(f(v));
  };
  return readModelProjection('instruction_sets', store, ['instruction_sets'], async (event) => {
    const e = event as unknown as Handled;
    switch (e.type) {
      case 'InstructionSetCreated':
        await sets.put(
          withDocuments(
            {
              id: e.data.setId,
              workspaceId: e.data.workspaceId,
              name: e.data.name,
              description: e.data.description,
              isPublic: e.data.isPublic,
              documents: [],
              documentIds: [],
              documentCount: 0,
              totalSizeBytes: 0,
              createdAt: e.data.createdAt,
              updatedAt: e.data.createdAt,
            },
            [],
          ),
        );
        break;
      case 'InstructionSetUpdated':
        await update(e.data.setId, (v) => ({
          ...v,
          name: e.data.name ?? v.name,
          description: e.data.description !== undefined ? e.data.description : v.description,
          isPublic: e.data.isPublic ?? v.isPublic,
          updatedAt: e.data.updatedAt,
        }));
        break;
      case 'InstructionSetDeleted':
        await sets.delete(e.data.setId);
        break;
      case 'SetDocumentAdded': {
        const entry: SetEntry = { documentId: e.data.documentId, title: e.data.title, sizeBytes: e.data.sizeBytes, purpose: e.data.purpose };
        await update(e.data.setId, (v) => ({
          ...withDocuments(v, [...v.documents.filter((d) => d.documentId !== entry.documentId), entry]),
          updatedAt: e.data.updatedAt,
        }));
        break;
      }
      case 'SetDocumentRemoved':
        await update(e.data.setId, (v) => ({
          ...withDocuments(
            v,
            v.documents.filter((d) => d.documentId !== e.data.documentId),
          ),
          updatedAt: e.data.updatedAt,
        }));
        break;
      case 'SetReordered':
        await update(e.data.setId, (v) => {
          const byId = new Map(v.documents.map((d) => [d.documentId, d]));
          const ordered = e.data.documentIds.map((id) => byId.get(id)).filter((d): d is SetEntry => d !== undefined);
          // Entries dropped meanwhile by a document deletion stay dropped; any not named keep their place at the end.
          const rest = v.documents.filter((d) => !e.data.documentIds.includes(d.documentId));
          return { ...withDocuments(v, [...ordered, ...rest]), updatedAt: e.data.updatedAt };
        });
        break;
      case 'SetDocumentResized':
        // Not a user's change of the set: updatedAt (optimistic locking) stays.
        await update(e.data.setId, (v) =>
          withDocuments(
            v,
            v.documents.map((d) => (d.documentId === e.data.documentId ? { ...d, sizeBytes: e.data.sizeBytes } : d)),
          ),
        );
        break;
      case 'DocumentDeleted': {
        // Dropped here at once (read-your-writes for whoever deleted it); the cleanup service then
        // appends SetDocumentRemoved to each set's stream so the sets' deciders learn it too.
        for (const v of await sets.find({ documentIds: { $contains: e.data.documentId } })) {
          await sets.put(
            withDocuments(
              v,
              v.documents.filter((d) => d.documentId !== e.data.documentId),
            ),
          );
        }
        break;
      }
      case 'DocumentMetadataUpdated': {
        const { title, purpose } = e.data;
        if (title === undefined && purpose === undefined) break;
        for (const v of await sets.find({ documentIds: { $contains: e.data.documentId } })) {
          await sets.put({
            ...v,
            documents: v.documents.map((d) => (d.documentId === e.data.documentId ? { ...d, title: title ?? d.title, purpose: purpose ?? d.purpose } : d)),
          });
        }
        break;
      }
      case 'WorkspaceDeleted':
        await sets.deleteMany({ workspaceId: e.data.workspaceId });
        break;
      default:
        break;
    }
  });
}
