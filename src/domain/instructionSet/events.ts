import { DomainEvent } from '../event';
import { Purpose } from '../workspace/events';
import { EventCatalog } from '../eventTraits';

/** Limits of one instruction set (spec section 8). */
export const MAX_SET_DOCUMENTS = 20;
export const MAX_SET_BYTES = 102400;

/**
 * A document as the set holds it: taken when it was added; sizeBytes (UTF-8 bytes of its
 * extracted text) then follows the document through SetDocumentResized.
 */
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
/**
 * A document of the set was VERIFIED again with another size (auto-save, reprocess): the
 * entry follows it, so the limits and totals stay true. Appended by the system (the
 * document clean-up process manager); not a change of the set by a user, so no updatedAt.
 */
export type SetDocumentResized = S<'SetDocumentResized', { documentId: string; sizeBytes: number; previousSizeBytes: number }>;

export type InstructionSetEvent = InstructionSetCreated | InstructionSetUpdated | InstructionSetDeleted | SetDocumentAdded | SetDocumentRemoved | SetReordered | SetDocumentResized;

export const instructionSetStream = (setId: string): string => `instructionset-${setId}`;

/** Audit and encryption traits of every instruction-set event (see EventTraits). */
export const instructionSetEventTraits: EventCatalog<InstructionSetEvent> = {
  InstructionSetCreated: { audit: ['name', 'description', 'isPublic'], encrypted: [] },
  InstructionSetUpdated: { audit: ['name', 'description', 'isPublic'], encrypted: [] },
  InstructionSetDeleted: { audit: [], encrypted: [] },
  SetDocumentAdded: { audit: ['title', 'sizeBytes', 'purpose'], encrypted: [] },
  SetDocumentResized: { audit: ['sizeBytes', 'previousSizeBytes'], encrypted: [] },
  SetDocumentRemoved: { audit: ['reason'], encrypted: [] },
  SetReordered: { audit: [], encrypted: [] },
};
