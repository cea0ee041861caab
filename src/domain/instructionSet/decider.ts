import { domainError } from '../errors';
import { Purpose, Role } from '../workspace/events';
import { roleAtLeast } from '../workspace/decider';
import { InstructionSetEvent, MAX_SET_BYTES, MAX_SET_DOCUMENTS, SetDocumentRemovalReason, SetEntry } from './events';

export interface InstructionSetState {
  status: 'none' | 'active' | 'deleted';
  setId: string;
  workspaceId: string;
  name: string;
  description: string | null;
  isPublic: boolean;
  /** In set order. */
  documents: SetEntry[];
  createdAt: string;
  updatedAt: string;
}

/**
 * Who asks: a workspace member with their role (null when not a member), or the system
 * (process managers such as the document-deletion cleanup).
 */
export interface SetActor {
  userId: string | null;
  role: Role | 'SYSTEM' | null;
}

/** The document to add, as the read model knew it when the command was issued (null: no such document). */
export interface DocumentSnapshot {
  documentId: string;
  workspaceId: string;
  title: string;
  sizeBytes: number;
  purpose: Purpose;
  processingStatus: string;
}

export type InstructionSetCommand =
  | { type: 'CreateInstructionSet'; setId: string; workspaceId: string; actor: SetActor; name: string; description: string | null; isPublic: boolean; now: Date }
  | { type: 'UpdateInstructionSet'; actor: SetActor; name?: string; description?: string | null; isPublic?: boolean; expectedUpdatedAt?: string; now: Date }
  | { type: 'DeleteInstructionSet'; actor: SetActor; now: Date }
  | { type: 'AddSetDocument'; actor: SetActor; documentId: string; document: DocumentSnapshot | null; now: Date; pendingGrowthBytes?: number }
  | { type: 'RemoveSetDocument'; actor: SetActor; documentId: string; reason: SetDocumentRemovalReason; now: Date }
  | { type: 'ReorderSetDocuments'; actor: SetActor; documentIds: string[]; now: Date }
  /** The system reports a document's current size (UTF-8 bytes of its text as last VERIFIED). */
  | { type: 'ResizeSetDocument'; actor: SetActor; documentId: string; sizeBytes: number };

export const totalSizeBytes = (s: Pick<InstructionSetState, 'documents'>): number => s.documents.reduce((n, d) => n + d.sizeBytes, 0);

function initialState(): InstructionSetState {
  return { status: 'none', setId: '', workspaceId: '', name: '', description: null, isPublic: false, documents: [], createdAt: '', updatedAt: '' };
}

function evolve(s: InstructionSetState, e: InstructionSetEvent): InstructionSetState {
  switch (e.type) {
    case 'InstructionSetCreated':
      return {
        ...s,
        status: 'active',
        setId: e.data.setId,
        workspaceId: e.data.workspaceId,
        name: e.data.name,
        description: e.data.description,
        isPublic: e.data.isPublic,
        createdAt: e.data.createdAt,
        updatedAt: e.data.createdAt,
      };
    case 'InstructionSetUpdated':
      return {
        ...s,
        name: e.data.name ?? s.name,
        description: e.data.description !== undefined ? e.data.description : s.description,
        isPublic: e.data.isPublic ?? s.isPublic,
        updatedAt: e.data.updatedAt,
      };
    case 'InstructionSetDeleted':
      return { ...s, status: 'deleted', updatedAt: e.data.deletedAt };
    case 'SetDocumentAdded':
      return {
        ...s,
        documents: [...s.documents, { documentId: e.data.documentId, title: e.data.title, sizeBytes: e.data.sizeBytes, purpose: e.data.purpose }],
        updatedAt: e.data.updatedAt,
      };
    case 'SetDocumentRemoved':
      return { ...s, documents: s.documents.filter((d) => d.documentId !== e.data.documentId), updatedAt: e.data.updatedAt };
    case 'SetReordered': {
      const byId = new Map(s.documents.map((d) => [d.documentId, d]));
      const ordered = e.data.documentIds.map((id) => byId.get(id)).filter((d): d is SetEntry => d !== undefined);
      return { ...s, documents: ordered, updatedAt: e.data.updatedAt };
    }
    case 'SetDocumentResized':
      return { ...s, documents: s.documents.map((d) => (d.documentId === e.data.documentId ? { ...d, sizeBytes: e.data.sizeBytes } : d)) };
    default: {
      const _never: never = e;
      return _never;
    }
  }
}

const notFound = () => domainError('NOT_FOUND', 'Instruction set not found.');

/** Existence first (non-members learn nothing), then the role: ADMIN or OWNER change a set. */
function authorize(s: InstructionSetState, actor: SetActor): void {
  if (s.status !== 'active') throw notFound();
  if (actor.role === 'SYSTEM') return;
  if (actor.role === null) throw notFound();
  if (!roleAtLeast(actor.role, 'ADMIN')) throw domainError('FORBIDDEN', 'Changing an instruction set needs the ADMIN or OWNER role.');
}

/** The set's next modification time: strictly after the last one, so optimistic locking never misses a change. */
function nextUpdatedAt(s: InstructionSetState, now: Date): string {
  const last = s.updatedAt ? Date.parse(s.updatedAt) : 0;
  return new Date(Math.max(now.getTime(), last + 1)).toISOString();
}

function decide(c: InstructionSetCommand, s: InstructionSetState): InstructionSetEvent[] {
  const ids = { setId: s.setId, workspaceId: s.workspaceId };
  switch (c.type) {
    case 'CreateInstructionSet': {
      if (c.actor.role === null) throw domainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
      if (c.actor.role !== 'SYSTEM' && !roleAtLeast(c.actor.role, 'ADMIN')) throw domainError('FORBIDDEN', 'Creating an instruction set needs the ADMIN or OWNER role.');
      if (s.status !== 'none') throw domainError('CONFLICT', 'Instruction set already exists.');
      return [
        {
          type: 'InstructionSetCreated',
          data: { setId: c.setId, workspaceId: c.workspaceId, name: c.name, description: c.description, isPublic: c.isPublic, createdAt: c.now.toISOString() },
        },
      ];
    }
    case 'UpdateInstructionSet': {
      authorize(s, c.actor);
      if (c.expectedUpdatedAt !== undefined && Date.parse(c.expectedUpdatedAt) < Date.parse(s.updatedAt)) {
        throw domainError('CONFLICT', 'The instruction set was modified since expectedUpdatedAt.', { lastModifiedAt: s.updatedAt });
      }
      const change: { name?: string; description?: string | null; isPublic?: boolean } = {};
      if (c.name !== undefined && c.name !== s.name) change.name = c.name;
      if (c.description !== undefined && c.description !== s.description) change.description = c.description;
      if (c.isPublic !== undefined && c.isPublic !== s.isPublic) change.isPublic = c.isPublic;
      if (Object.keys(change).length === 0) return [];
      return [{ type: 'InstructionSetUpdated', data: { ...ids, ...change, updatedAt: nextUpdatedAt(s, c.now) } }];
    }
    case 'DeleteInstructionSet':
      authorize(s, c.actor);
      return [{ type: 'InstructionSetDeleted', data: { ...ids, deletedAt: nextUpdatedAt(s, c.now) } }];
    case 'AddSetDocument': {
      authorize(s, c.actor);
      const d = c.document;
      if (d === null || d.documentId !== c.documentId || d.workspaceId !== s.workspaceId) {
        throw domainError('NOT_FOUND', 'Document not found in this workspace.', { documentId: c.documentId });
      }
      if (s.documents.some((x) => x.documentId === d.documentId)) {
        throw domainError('DOCUMENT_ALREADY_IN_SET', 'The document is already in this instruction set.', { documentId: d.documentId });
      }
      if (d.processingStatus !== 'VERIFIED') {
        throw domainError('DOCUMENT_NOT_VERIFIED', `Only VERIFIED documents can be added; this one is ${d.processingStatus}.`, {
          documentId: d.documentId,
          processingStatus: d.processingStatus,
        });
      }
      if (s.documents.length >= MAX_SET_DOCUMENTS) {
        throw domainError('DOCUMENT_LIMIT_EXCEEDED', `An instruction set holds at most ${MAX_SET_DOCUMENTS} documents.`, {
          currentCount: s.documents.length,
          maxDocuments: MAX_SET_DOCUMENTS,
        });
      }
      // Accepted auto-saves of the set's documents still being processed count already.
      const currentSize = totalSizeBytes(s) + (c.pendingGrowthBytes ?? 0);
      if (currentSize + d.sizeBytes > MAX_SET_BYTES) {
        throw domainError('SIZE_LIMIT_EXCEEDED', `Adding this document would pass the ${MAX_SET_BYTES}-byte limit of an instruction set.`, {
          currentSize,
          documentSize: d.sizeBytes,
          maxSize: MAX_SET_BYTES,
        });
      }
      return [
        {
          type: 'SetDocumentAdded',
          data: { ...ids, documentId: d.documentId, title: d.title, sizeBytes: d.sizeBytes, purpose: d.purpose, updatedAt: nextUpdatedAt(s, c.now) },
        },
      ];
    }
    case 'RemoveSetDocument': {
      // The cleanup after a document deletion is idempotent: a set already gone, or without the document, needs nothing.
      if (c.reason === 'document_deleted' && (s.status !== 'active' || !s.documents.some((d) => d.documentId === c.documentId))) return [];
      authorize(s, c.actor);
      if (!s.documents.some((d) => d.documentId === c.documentId)) {
        throw domainError('NOT_FOUND', 'The document is not in this instruction set.', { documentId: c.documentId });
      }
      return [{ type: 'SetDocumentRemoved', data: { ...ids, documentId: c.documentId, reason: c.reason, updatedAt: nextUpdatedAt(s, c.now) } }];
    }
    case 'ReorderSetDocuments': {
      authorize(s, c.actor);
      const current = new Set(s.documents.map((d) => d.documentId));
      const given = new Set(c.documentIds);
      const isPermutation = given.size === c.documentIds.length && c.documentIds.length === current.size && c.documentIds.every((id) => current.has(id));
      if (!isPermutation) {
        throw domainError('VALIDATION_ERROR', "documentIds must list every document of the set exactly once (a permutation of the set's documents).", {
          expected: s.documents.map((d) => d.documentId),
          received: c.documentIds,
        });
      }
      if (c.documentIds.every((id, i) => s.documents[i].documentId === id)) return [];
      return [{ type: 'SetReordered', data: { ...ids, documentIds: c.documentIds, updatedAt: nextUpdatedAt(s, c.now) } }];
    }
    case 'ResizeSetDocument': {
      // Only the system reports sizes; users never set them.
      if (c.actor.role !== 'SYSTEM') throw domainError('FORBIDDEN', 'Only the system records document sizes.');
      if (!Number.isInteger(c.sizeBytes) || c.sizeBytes < 0) throw domainError('VALIDATION_ERROR', 'sizeBytes must be a non-negative integer.', { sizeBytes: c.sizeBytes });
      // Idempotent: a set gone, a document no longer in it, or an unchanged size needs nothing.
      // The result may pass the byte limit (the document grew while in the set): the fact is
      // recorded as it is, and further adds are refused until the set is back under the limit.
      const entry = s.status === 'active' ? s.documents.find((d) => d.documentId === c.documentId) : undefined;
      if (!entry || entry.sizeBytes === c.sizeBytes) return [];
      return [{ type: 'SetDocumentResized', data: { ...ids, documentId: c.documentId, sizeBytes: c.sizeBytes, previousSizeBytes: entry.sizeBytes } }];
    }
    default: {
      const _never: never = c;
      return _never;
    }
  }
}

export const instructionSetDecider = { initialState, evolve, decide };
