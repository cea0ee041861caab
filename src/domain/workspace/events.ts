import { DomainEvent } from '../event';

export type Role = 'OWNER' | 'ADMIN' | 'MEMBER';
export type Purpose = 'KNOWLEDGE' | 'INSTRUCTION';

export interface WorkspaceSettings {
  allowPublicSearchLinks: boolean;
  defaultDocumentPurpose: Purpose;
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
  | TagCreated
  | TagUpdated
  | TagDeleted;

export const workspaceStream = (workspaceId: string): string => `workspace-${workspaceId}`;
