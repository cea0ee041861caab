import { DomainEvent } from '../event';
import { EventCatalog } from '../eventTraits';

export type Role = 'OWNER' | 'ADMIN' | 'MEMBER';
export type Purpose = 'KNOWLEDGE' | 'INSTRUCTION';

export interface WorkspaceSettings {
  allowPublicSearchLinks: boolean;
  defaultDocumentPurpose: Purpose;
  /** Members must use a second factor to reach the workspace with a session (API keys stay usable). Absent: false. */
  requireMfa?: boolean;
  /** Members must have verified their e-mail address. Absent: false. */
  requireVerifiedEmail?: boolean;
}

export const DEFAULT_SETTINGS: WorkspaceSettings = { allowPublicSearchLinks: true, defaultDocumentPurpose: 'KNOWLEDGE' };

type W<T extends string, D> = DomainEvent<T, { workspaceId: string } & D>;

export type WorkspaceCreated = W<'WorkspaceCreated', { name: string; ownerId: string; createdAt: string; settings: WorkspaceSettings }>;
export type WorkspaceUpdated = W<'WorkspaceUpdated', { name?: string; settings?: Partial<WorkspaceSettings>; updatedAt: string }>;
export type WorkspaceDeleted = W<'WorkspaceDeleted', { deletedAt: string }>;
export type MemberAdded = W<'MemberAdded', { userId: string; role: Role; joinedAt: string; invitationId?: string }>;
export type MemberRoleChanged = W<'MemberRoleChanged', { userId: string; role: Role; previousRole: Role }>;
export type MemberRemoved = W<'MemberRemoved', { userId: string }>;
export type InvitationCreated = W<'InvitationCreated', { invitationId: string; email: string; role: Role; expiresAt: string; createdAt: string }>;
export type InvitationAccepted = W<'InvitationAccepted', { invitationId: string; userId: string }>;
/** A pending invitation withdrawn by an ADMIN or OWNER: its link (and its id) no longer let anyone in. */
export type InvitationRevoked = W<'InvitationRevoked', { invitationId: string; revokedAt: string }>;
/** The OWNER hands the workspace over: `toUserId` becomes OWNER, `fromUserId` (the OWNER acting) becomes ADMIN, in one event. */
export type OwnershipTransferred = W<'OwnershipTransferred', { fromUserId: string; toUserId: string; previousRole: Role; transferredAt: string }>;
export type TagCreated = W<'TagCreated', { tagId: string; name: string; color: string }>;
export type TagUpdated = W<'TagUpdated', { tagId: string; name: string; color: string }>;
export type TagDeleted = W<'TagDeleted', { tagId: string }>;

export type WorkspaceEvent =
  | WorkspaceCreated
  | WorkspaceUpdated
  | WorkspaceDeleted
  | MemberAdded
  | MemberRoleChanged
  | MemberRemoved
  | InvitationCreated
  | InvitationAccepted
  | InvitationRevoked
  | OwnershipTransferred
  | TagCreated
  | TagUpdated
  | TagDeleted;

export const workspaceStream = (workspaceId: string): string => `workspace-${workspaceId}`;

/** Audit and encryption traits of every workspace event (see EventTraits). */
export const workspaceEventTraits: EventCatalog<WorkspaceEvent> = {
  WorkspaceCreated: { audit: ['name', 'settings'], encrypted: [] },
  WorkspaceUpdated: { audit: ['name', 'settings'], encrypted: [] },
  WorkspaceDeleted: { audit: [], encrypted: [] },
  MemberAdded: { audit: ['role'], encrypted: [] },
  MemberRoleChanged: { audit: ['role', 'previousRole'], encrypted: [] },
  MemberRemoved: { audit: [], encrypted: [] },
  InvitationCreated: { audit: ['email', 'role', 'expiresAt'], encrypted: [] },
  InvitationAccepted: { audit: [], encrypted: [] },
  InvitationRevoked: { audit: ['invitationId'], encrypted: [] },
  OwnershipTransferred: { audit: ['fromUserId', 'toUserId', 'previousRole'], encrypted: [] },
  TagCreated: { audit: ['name', 'color'], encrypted: [] },
  TagUpdated: { audit: ['name', 'color'], encrypted: [] },
  TagDeleted: { audit: [], encrypted: [] },
};
