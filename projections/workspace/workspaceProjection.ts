import { Projection, readModelProjection } from '../../src/core/projection';
import { ReadStore } from '../../src/ports/readStore';
import { Role, WorkspaceEvent, WorkspaceSettings } from '../../src/domain/workspace/events';

export interface WorkspaceView {
  id: string;
  name: string;
  createdAt: string;
  updatedAt: string;
  settings: WorkspaceSettings;
}

export interface MemberView {
  id: string; // `${workspaceId}:${userId}`
  workspaceId: string;
  userId: string;
  role: Role;
  joinedAt: string;
}

export interface InvitationView {
  id: string;
  workspaceId: string;
  email: string;
  role: Role;
  expiresAt: string;
  createdAt: string;
  accepted: boolean;
}

export interface TagView {
  id: string; // tagViewId(workspaceId, tagId): a tag id never names a row of another workspace
  tagId: string;
  workspaceId: string;
  name: string;
  color: string;
}

export const workspacesCollection = (s: ReadStore) => s.collection<WorkspaceView>('workspaces');
export const membersCollection = (s: ReadStore) =>
  s.collection<MemberView>('members', [{ fields: ['workspaceId'] }, { fields: ['userId'] }]);
export const invitationsCollection = (s: ReadStore) => s.collection<InvitationView>('invitations', [{ fields: ['workspaceId'] }]);
export const tagsCollection = (s: ReadStore) => s.collection<TagView>('tags', [{ fields: ['workspaceId'] }]);

export const memberId = (workspaceId: string, userId: string): string => `${workspaceId}:${userId}`;
export const tagViewId = (workspaceId: string, tagId: string): string => `${workspaceId}:${tagId}`;

/**
 * Layout version of these read models. 2: tag rows keyed by workspace and tag id (were keyed
 * by tag id alone, so one workspace's event could overwrite another's row). A store of
 * version 1 is rebuilt from the log at start.
 */
const WORKSPACES_READ_MODEL_VERSION = 2;

export function workspaceProjection(store: ReadStore): Projection {
  const workspaces = workspacesCollection(store);
  const members = membersCollection(store);
  const invitations = invitationsCollection(store);
  const tags = tagsCollection(store);
  return readModelProjection('workspaces', store, ['workspaces', 'members', 'invitations', 'tags'], async (event) => {
    const e = event as unknown as WorkspaceEvent;
    const at = event.metadata.occurredAt;
    switch (e.type) {
      case 'WorkspaceCreated':
        await workspaces.put({ id: e.data.workspaceId, name: e.data.name, createdAt: e.data.createdAt, updatedAt: e.data.createdAt, settings: e.data.settings });
        await members.put({ id: memberId(e.data.workspaceId, e.data.ownerId), workspaceId: e.data.workspaceId, userId: e.data.ownerId, role: 'OWNER', joinedAt: e.data.createdAt });
        break;
      case 'WorkspaceUpdated': {
        const w = await workspaces.get(e.data.workspaceId);
        if (w) await workspaces.put({ ...w, name: e.data.name ?? w.name, settings: { ...w.settings, ...(e.data.settings ?? {}) }, updatedAt: e.data.updatedAt });
        break;
      }
      case 'WorkspaceDeleted':
        await workspaces.delete(e.data.workspaceId);
        await members.deleteMany({ workspaceId: e.data.workspaceId });
        await invitations.deleteMany({ workspaceId: e.data.workspaceId });
        await tags.deleteMany({ workspaceId: e.data.workspaceId });
        break;
      case 'MemberAdded':
        await members.put({ id: memberId(e.data.workspaceId, e.data.userId), workspaceId: e.data.workspaceId, userId: e.data.userId, role: e.data.role, joinedAt: e.data.joinedAt });
        break;
      case 'MemberRoleChanged': {
        const m = await members.get(memberId(e.data.workspaceId, e.data.userId));
        if (m) await members.put({ ...m, role: e.data.role });
        break;
      }
      case 'MemberRemoved':
        await members.delete(memberId(e.data.workspaceId, e.data.userId));
        break;
      case 'InvitationCreated':
        await invitations.put({ id: e.data.invitationId, workspaceId: e.data.workspaceId, email: e.data.email, role: e.data.role, expiresAt: e.data.expiresAt, createdAt: e.data.createdAt, accepted: false });
        break;
      case 'InvitationAccepted': {
        const i = await invitations.get(e.data.invitationId);
        if (i) await invitations.put({ ...i, accepted: true });
        break;
      }
      case 'InvitationRevoked': {
        // Only this workspace's invitation (an id is global, but the row names its workspace).
        const i = await invitations.get(e.data.invitationId);
        if (i && i.workspaceId === e.data.workspaceId) await invitations.delete(e.data.invitationId);
        break;
      }
      case 'OwnershipTransferred': {
        const to = await members.get(memberId(e.data.workspaceId, e.data.toUserId));
        const from = await members.get(memberId(e.data.workspaceId, e.data.fromUserId));
        if (to && from) {
          await members.put({ ...to, role: 'OWNER' });
          await members.put({ ...from, role: 'ADMIN' });
        }
        break;
      }
      case 'TagCreated':
        await tags.put({ id: tagViewId(e.data.workspaceId, e.data.tagId), tagId: e.data.tagId, workspaceId: e.data.workspaceId, name: e.data.name, color: e.data.color });
        break;
      case 'TagUpdated': {
        // Only a tag the workspace created (old logs hold updates of tags that never existed).
        const t = await tags.get(tagViewId(e.data.workspaceId, e.data.tagId));
        if (t) await tags.put({ ...t, name: e.data.name, color: e.data.color });
        break;
      }
      case 'TagDeleted':
        await tags.delete(tagViewId(e.data.workspaceId, e.data.tagId));
        break;
      default:
        void at;
        break;
    }
  }, { version: WORKSPACES_READ_MODEL_VERSION });
}
