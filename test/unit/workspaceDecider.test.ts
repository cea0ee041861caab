import { workspaceDecider } from '../../src/domain/workspace/decider';
import { DEFAULT_SETTINGS, WorkspaceEvent } from '../../src/domain/workspace/events';
import { specFor } from '../support/given';

const spec = specFor(workspaceDecider);
const now = new Date('2026-01-01T00:00:00.000Z');
const W = 'ws-1';
const created: WorkspaceEvent = { type: 'WorkspaceCreated', data: { workspaceId: W, name: 'Docs', ownerId: 'owner', createdAt: now.toISOString(), settings: DEFAULT_SETTINGS } };
const admin: WorkspaceEvent = { type: 'MemberAdded', data: { workspaceId: W, userId: 'admin', role: 'ADMIN', joinedAt: now.toISOString() } };
const member: WorkspaceEvent = { type: 'MemberAdded', data: { workspaceId: W, userId: 'member', role: 'MEMBER', joinedAt: now.toISOString() } };
const invited: WorkspaceEvent = {
  type: 'InvitationCreated',
  data: { workspaceId: W, invitationId: 'inv', email: 'new@example.com', role: 'MEMBER', createdAt: now.toISOString(), expiresAt: '2026-01-08T00:00:00.000Z' },
};

describe('workspace decider', () => {
  it('creates a workspace owned by its creator with default settings', () => {
    spec([]).when({ type: 'CreateWorkspace', workspaceId: W, actorId: 'owner', name: 'Docs', now }).then([created]);
  });

  it('refuses to create a workspace twice', () => {
    spec([created]).when({ type: 'CreateWorkspace', workspaceId: W, actorId: 'owner', name: 'Docs', now }).thenThrows('CONFLICT');
  });

  it('hides the workspace from non-members and forbids members below the role', () => {
    spec([created]).when({ type: 'UpdateWorkspace', actorId: 'stranger', name: 'X', now }).thenThrows('WORKSPACE_NOT_FOUND');
    spec([created, member]).when({ type: 'UpdateWorkspace', actorId: 'member', name: 'X', now }).thenThrows('FORBIDDEN');
    spec([created, admin]).when({ type: 'DeleteWorkspace', actorId: 'admin', now }).thenThrows('FORBIDDEN');
  });

  it('records only the settings that change', () => {
    spec([created, admin])
      .when({ type: 'UpdateWorkspace', actorId: 'admin', settings: { allowPublicSearchLinks: false, defaultDocumentPurpose: 'KNOWLEDGE' }, now })
      .then([{ type: 'WorkspaceUpdated', data: { workspaceId: W, settings: { allowPublicSearchLinks: false }, updatedAt: now.toISOString() } }]);
    spec([created]).when({ type: 'UpdateWorkspace', actorId: 'owner', name: 'Docs', now }).then([]);
  });

  it('adds members once; only an owner grants OWNER', () => {
    spec([created, admin]).when({ type: 'AddMember', actorId: 'admin', userId: 'u2', role: 'MEMBER', now }).then([
      { type: 'MemberAdded', data: { workspaceId: W, userId: 'u2', role: 'MEMBER', joinedAt: now.toISOString() } },
    ]);
    spec([created, member]).when({ type: 'AddMember', actorId: 'owner', userId: 'member', role: 'MEMBER', now }).thenThrows('MEMBER_EXISTS');
    spec([created, admin]).when({ type: 'AddMember', actorId: 'admin', userId: 'u3', role: 'OWNER', now }).thenThrows('FORBIDDEN');
  });

  it('keeps an owner: an owner cannot remove themselves nor demote the last owner', () => {
    spec([created]).when({ type: 'RemoveMember', actorId: 'owner', userId: 'owner' }).thenThrows('CANNOT_REMOVE_OWNER');
    spec([created]).when({ type: 'ChangeMemberRole', actorId: 'owner', userId: 'owner', role: 'ADMIN' }).thenThrows('CANNOT_REMOVE_OWNER');
  });

  it('transfers ownership: grant OWNER, then the former owner may step down', () => {
    const granted: WorkspaceEvent = { type: 'MemberRoleChanged', data: { workspaceId: W, userId: 'admin', role: 'OWNER', previousRole: 'ADMIN' } };
    spec([created, admin]).when({ type: 'ChangeMemberRole', actorId: 'owner', userId: 'admin', role: 'OWNER' }).then([granted]);
    spec([created, admin, granted]).when({ type: 'RemoveMember', actorId: 'admin', userId: 'owner' }).then([{ type: 'MemberRemoved', data: { workspaceId: W, userId: 'owner' } }]);
  });

  it('lets an admin remove members but not owners; a member may leave', () => {
    spec([created, admin, member]).when({ type: 'RemoveMember', actorId: 'admin', userId: 'member' }).then([{ type: 'MemberRemoved', data: { workspaceId: W, userId: 'member' } }]);
    spec([created, admin]).when({ type: 'RemoveMember', actorId: 'admin', userId: 'owner' }).thenThrows('FORBIDDEN');
    spec([created, member]).when({ type: 'RemoveMember', actorId: 'member', userId: 'member' }).then([{ type: 'MemberRemoved', data: { workspaceId: W, userId: 'member' } }]);
    spec([created, admin, member]).when({ type: 'RemoveMember', actorId: 'member', userId: 'admin' }).thenThrows('FORBIDDEN');
  });

  it('invitations expire after 7 days and only the invited email can accept', () => {
    spec([created]).when({ type: 'InviteMember', actorId: 'owner', invitationId: 'inv', email: 'New@Example.com', role: 'MEMBER', now }).then([invited]);
    spec([created, invited])
      .when({ type: 'AcceptInvitation', actorId: 'newbie', actorEmail: 'new@example.com', invitationId: 'inv', now: new Date('2026-01-02T00:00:00Z') })
      .then([
        { type: 'InvitationAccepted', data: { workspaceId: W, invitationId: 'inv', userId: 'newbie' } },
        { type: 'MemberAdded', data: { workspaceId: W, userId: 'newbie', role: 'MEMBER', joinedAt: '2026-01-02T00:00:00.000Z', invitationId: 'inv' } },
      ]);
    spec([created, invited]).when({ type: 'AcceptInvitation', actorId: 'x', actorEmail: 'other@example.com', invitationId: 'inv', now }).thenThrows('INVITATION_NOT_FOUND');
    spec([created, member]).when({ type: 'InviteMember', actorId: 'owner', invitationId: 'inv2', email: 'm@example.com', role: 'MEMBER', now, inviteeUserId: 'member' }).thenThrows('MEMBER_EXISTS');
    spec([created, invited])
      .when({ type: 'AcceptInvitation', actorId: 'newbie', actorEmail: 'new@example.com', invitationId: 'inv', now: new Date('2026-01-08T00:00:01Z') })
      .thenThrows('INVITATION_EXPIRED');
  });

  it('tags: unique names per workspace, update and delete', () => {
    const tag: WorkspaceEvent = { type: 'TagCreated', data: { workspaceId: W, tagId: 't1', name: 'Legal', color: '#ff0000' } };
    spec([created]).when({ type: 'CreateTag', actorId: 'owner', tagId: 't1', name: 'Legal', color: '#ff0000' }).then([tag]);
    spec([created, tag]).when({ type: 'CreateTag', actorId: 'owner', tagId: 't2', name: 'legal', color: '#00ff00' }).thenThrows('TAG_EXISTS');
    spec([created, tag]).when({ type: 'UpdateTag', actorId: 'owner', tagId: 't1', name: 'Compliance' }).then([
      { type: 'TagUpdated', data: { workspaceId: W, tagId: 't1', name: 'Compliance', color: '#ff0000' } },
    ]);
    spec([created, tag]).when({ type: 'DeleteTag', actorId: 'owner', tagId: 'nope' }).thenThrows('TAG_NOT_FOUND');
    spec([created, member, tag]).when({ type: 'DeleteTag', actorId: 'member', tagId: 't1' }).thenThrows('FORBIDDEN');
  });

  it('a deleted workspace refuses every command', () => {
    const deleted: WorkspaceEvent = { type: 'WorkspaceDeleted', data: { workspaceId: W, deletedAt: now.toISOString() } };
    spec([created, deleted]).when({ type: 'UpdateWorkspace', actorId: 'owner', name: 'X', now }).thenThrows('WORKSPACE_NOT_FOUND');
  });
});
