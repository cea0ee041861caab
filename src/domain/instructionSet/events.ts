import { DomainEvent } from '../event';
import { Purpose } from '../workspace/events';

/** Limits of one instruction set (spec section 8). */
export const MAX_SET_DOCUMENTS = 20;
export const MAX_SET_BYTES = 102400;

/** A document as the set holds it: a snapshot taken when it was added (sizeBytes = UTF-8 bytes of its text). */
export interface SetEntry {
  documentId: string;
  title: string;
  sizeBytes: number;
  purpose: Purpose;
}

export type SetDocumentRemovalReason = 'removed' | 'document_deleted';

type S<T extends string, D> = DomainEvent<T, { setId: string; workspaceId: string } & D>;

export type InstructionSetCreated = S<'InstructionSetCreated', { name: string; description: string | null; isPublic: boolean; createdAt: string }>;
/** Only the fields that changed are present; `updatedAt` is the set's new modification time. */
export type InstructionSetUpdated = S<'InstructionSetUpdated', { name?: string; description?: string | null; isPublic?: boolean; updatedAt: string }>;
export type InstructionSetDeleted = S<'InstructionSetDeleted', { deletedAt: string }>;
export type SetDocumentAdded = S<'SetDocumentAdded', SetEntry & { updatedAt: string }>;
export type SetDocumentRemoved = S<'SetDocumentRemoved', { documentId: string; reason: SetDocumentRemovalReason; updatedAt: string }>;
export type SetReordered = S<'SetReordered', { documentIds: string[]; updatedAt: string }>;

export type InstructionSetEvent = InstructionSetCreated | InstructionSetUpdated | InstructionSetDeleted | SetDocumentAdded | SetDocumentRemoved | SetReordered;

export const INSTRUCTION_SET_EVENT_TYPES: ReadonlySet<string> = new Set<InstructionSetEvent['type']>([
  'InstructionSetCreated',
  'InstructionSetUpdated',
  'InstructionSetDeleted',
  'SetDocumentAdded',
  'SetDocumentRemoved',
  'SetReordered',
]);

export const instructionSetStream = (setId: string): string => `instructionset-${setId}`;
