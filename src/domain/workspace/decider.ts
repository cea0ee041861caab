import { domainError } from '../errors';
import { DEFAULT_SETTINGS, Role, WorkspaceEvent, WorkspaceSettings } from './events';

export interface WorkspaceState {
  status: 'none' | 'active' | 'deleted';
  workspaceId: string;
  name: string;
  settings: WorkspaceSettings;
  /**
   * Keyed by ids that come from outside: Maps, never plain objects, so that a name such as
   * `constructor` or `__proto__` is not mistaken for an entry (issue 11, finding 5).
   */
  members: ReadonlyMap<string, Role>;
  invitations: ReadonlyMap<string, Invitation>;
  tags: ReadonlyMap<string, Tag>;
}

export interface Invitation {
  email: string;
  role: Role;
  expiresAt: string;
  accepted: boolean;
}

export interface Tag {
  name: string;
  color: string;
}

/** A copy of `m` with `key` set to `value` (states are immutable). */
function withEntry<V>(m: ReadonlyMap<string, V>, key: string, value: V): ReadonlyMap<string, V> {
  const next = new Map(m);
  next.set(key, value);
  return next;
}

/** A copy of `m` without `key`. */
function withoutEntry<V>(m: ReadonlyMap<string, V>, key: string): ReadonlyMap<string, V> {
  const next = new Map(m);
  next.delete(key);
  return next;
}

export type WorkspaceCommand =
  | { type: 'CreateWorkspace'; workspaceId: string; actorId: string; name: string; now: Date }
  | { type: 'UpdateWorkspace'; actorId: string; name?: string; settings?: Partial<WorkspaceSettings>; now: Date }
  | { type: 'DeleteWorkspace'; actorId: string; now: Date }
  | { type: 'AddMember'; actorId: string; userId: string; role: Role; now: Date }
  | { type: 'ChangeMemberRole'; actorId: string; userId: string; role: Role }
  | { type: 'RemoveMember'; actorId: string; userId: string }
  | { type: 'InviteMember'; actorId: string; invitationId: string; email: string; role: Role; now: Date; inviteeUserId?: string }
  | { type: 'AcceptInvitation'; actorId: string; actorEmail: string; invitationId: string; now: Date }
  | { type: 'RevokeInvitation'; actorId: string; invitationId: string; now: Date }
  | { type: 'TransferOwnership'; actorId: string; userId: string; now: Date }
  | { type: 'CreateTag'; actorId: string; tagId: string; name: string; color: string }
  | { type: 'UpdateTag'; actorId: string; tagId: string; name?: string; color?: string }
  | { type: 'DeleteTag'; actorId: string; tagId: string };

export const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000;

const RANK: Record<Role, number> = { MEMBER: 1, ADMIN: 2, OWNER: 3 };

export function roleAtLeast(role: Role | undefined, needed: Role): boolean {
  return role !== undefined && RANK[role] >= RANK[needed];
}

function initialState(): WorkspaceState {
  return { status: 'none', workspaceId: '', name: '', settings: DEFAULT_SETTINGS, members: new Map(), invitations: new Map(), tags: new Map() };
}

function evolve(s: WorkspaceState, e: WorkspaceEvent): WorkspaceState {
  switch (e.type) {
    case 'WorkspaceCreated':
      return { ...s, status: 'active', workspaceId: e.data.workspaceId, name: e.data.name, settings: e.data.settings, members: new Map([[e.data.ownerId, 'OWNER']]) };
    case 'WorkspaceUpdated':
      return { ...s, name: e.data.name ?? s.name, settings: { ...s.settings, ...(e.data.settings ?? {}) } };
    case 'WorkspaceDeleted':
      return { ...s, status: 'deleted' };
    case 'MemberAdded': {
      const invitation = e.data.invitationId !== undefined ? s.invitations.get(e.data.invitationId) : undefined;
      const invitations = invitation && e.data.invitationId !== undefined ? withEntry(s.invitations, e.data.invitationId, { ...invitation, accepted: true }) : s.invitations;
      return { ...s, members: withEntry(s.members, e.data.userId, e.data.role), invitations };
    }
    case 'MemberRoleChanged':
      // Old logs hold role changes of members that never existed (a `constructor` promoted to OWNER): they change nothing.
      return s.members.has(e.data.userId) ? { ...s, members: withEntry(s.members, e.data.userId, e.data.role) } : s;
    case 'MemberRemoved':
      return { ...s, members: withoutEntry(s.members, e.data.userId) };
    case 'InvitationCreated':
      return { ...s, invitations: withEntry(s.invitations, e.data.invitationId, { email: e.data.email, role: e.data.role, expiresAt: e.data.expiresAt, accepted: false }) };
    case 'InvitationAccepted': {
      const invitation = s.invitations.get(e.data.invitationId);
      return invitation ? { ...s, invitations: withEntry(s.invitations, e.data.invitationId, { ...invitation, accepted: true }) } : s;
    }
    case 'InvitationRevoked':
      return { ...s, invitations: withoutEntry(s.invitations, e.data.invitationId) };
    case 'OwnershipTransferred':
      // Both are members when the event was decided; a log edited by hand changes nothing here.
      if (!s.members.has(e.data.toUserId) || !s.members.has(e.data.fromUserId)) return s;
      return { ...s, members: withEntry(withEntry(s.members, e.data.toUserId, 'OWNER'), e.data.fromUserId, 'ADMIN') };
    case 'TagCreated':
      return { ...s, tags: withEntry(s.tags, e.data.tagId, { name: e.data.name, color: e.data.color }) };
    case 'TagUpdated':
      // Likewise updates of tags never created (phantom ids in old logs).
      return s.tags.has(e.data.tagId) ? { ...s, tags: withEntry(s.tags, e.data.tagId, { name: e.data.name, color: e.data.color }) } : s;
    case 'TagDeleted':
      return { ...s, tags: withoutEntry(s.tags, e.data.tagId) };
    default: {
      const _never: never = e;
      return _never;
    }
  }
}

/** Membership and role checks shared by every command on an existing workspace. */
function authorize(s: WorkspaceState, actorId: string, needed: Role): Role {
  const role = s.status === 'active' ? s.members.get(actorId) : undefined;
  if (role === undefined) throw domainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
  if (!roleAtLeast(role, needed)) throw domainError('FORBIDDEN', `This action needs the ${needed} role.`);
  return role;
}

function owners(s: WorkspaceState): string[] {
  return [...s.members].filter(([, r]) => r === 'OWNER').map(([u]) => u);
}

function decide(c: WorkspaceCommand, s: WorkspaceState): WorkspaceEvent[] {
  const workspaceId = s.workspaceId;
  switch (c.type) {
    case 'CreateWorkspace':
      if (s.status !== 'none') throw domainError('CONFLICT', 'Workspace already exists.');
      return [{ type: 'WorkspaceCreated', data: { workspaceId: c.workspaceId, name: c.name, ownerId: c.actorId, createdAt: c.now.toISOString(), settings: DEFAULT_SETTINGS } }];
    case 'UpdateWorkspace': {
      authorize(s, c.actorId, 'ADMIN');
      const name = c.name !== undefined && c.name !== s.name ? c.name : undefined;
      const changed: Partial<WorkspaceSettings> = {};
      for (const [k, v] of Object.entries(c.settings ?? {}) as [keyof WorkspaceSettings, WorkspaceSettings[keyof WorkspaceSettings]][]) {
        if (s.settings[k] !== v) Object.assign(changed, { [k]: v });
      }
      if (name === undefined && Object.keys(changed).length === 0) return [];
      return [
        {
          type: 'WorkspaceUpdated',
          data: { workspaceId, ...(name !== undefined ? { name } : {}), ...(Object.keys(changed).length ? { settings: changed } : {}), updatedAt: c.now.toISOString() },
        },
      ];
    }
    case 'DeleteWorkspace':
      authorize(s, c.actorId, 'OWNER');
      return [{ type: 'WorkspaceDeleted', data: { workspaceId, deletedAt: c.now.toISOString() } }];
    case 'AddMember': {
      const actorRole = authorize(s, c.actorId, 'ADMIN');
      if (c.role === 'OWNER' && actorRole !== 'OWNER') throw domainError('FORBIDDEN', 'Only an OWNER can grant the OWNER role.');
      if (s.members.has(c.userId)) throw domainError('MEMBER_EXISTS', 'The user is already a member of this workspace.');
      return [{ type: 'MemberAdded', data: { workspaceId, userId: c.userId, role: c.role, joinedAt: c.now.toISOString() } }];
    }
    case 'ChangeMemberRole': {
      const actorRole = authorize(s, c.actorId, 'ADMIN');
      const current = s.members.get(c.userId);
      if (current === undefined) throw domainError('MEMBER_NOT_FOUND', 'The user is not a member of this workspace.');
      if ((c.role === 'OWNER' || current === 'OWNER') && actorRole !== 'OWNER') throw domainError('FORBIDDEN', 'Only an OWNER can grant or take the OWNER role.');
      if (current === c.role) return [];
      if (current === 'OWNER' && owners(s).length === 1) {
        throw domainError('CANNOT_REMOVE_OWNER', 'The workspace must keep an owner: make another member OWNER first.');
      }
      return [{ type: 'MemberRoleChanged', data: { workspaceId, userId: c.userId, role: c.role, previousRole: current } }];
    }
    case 'RemoveMember': {
      const self = c.actorId === c.userId;
      const actorRole = authorize(s, c.actorId, self ? 'MEMBER' : 'ADMIN');
      const target = s.members.get(c.userId);
      if (target === undefined) throw domainError('MEMBER_NOT_FOUND', 'The user is not a member of this workspace.');
      if (self && target === 'OWNER') throw domainError('CANNOT_REMOVE_OWNER', 'An owner cannot remove themselves: transfer ownership first.');
      if (target === 'OWNER' && actorRole !== 'OWNER') throw domainError('FORBIDDEN', 'Only an OWNER can remove an OWNER.');
      return [{ type: 'MemberRemoved', data: { workspaceId, userId: c.userId } }];
    }
    case 'InviteMember': {
      const actorRole = authorize(s, c.actorId, 'ADMIN');
      if (c.role === 'OWNER' && actorRole !== 'OWNER') throw domainError('FORBIDDEN', 'Only an OWNER can invite an OWNER.');
      if (c.inviteeUserId !== undefined && s.members.has(c.inviteeUserId)) throw domainError('MEMBER_EXISTS', 'A user with this email is already a member of this workspace.');
      return [
        {
          type: 'InvitationCreated',
          data: { workspaceId, invitationId: c.invitationId, email: c.email.toLowerCase(), role: c.role, createdAt: c.now.toISOString(), expiresAt: new Date(c.now.getTime() + INVITATION_TTL_MS).toISOString() },
        },
      ];
    }
    case 'AcceptInvitation': {
      const inv = s.invitations.get(c.invitationId);
      if (s.status !== 'active' || !inv || inv.accepted || inv.email !== c.actorEmail.toLowerCase()) {
        throw domainError('INVITATION_NOT_FOUND', 'Invitation not found.');
      }
      if (Date.parse(inv.expiresAt) <= c.now.getTime()) throw domainError('INVITATION_EXPIRED', 'The invitation has expired; ask for a new one.');
      if (s.members.has(c.actorId)) throw domainError('MEMBER_EXISTS', 'You are already a member of this workspace.');
      return [
        { type: 'InvitationAccepted', data: { workspaceId, invitationId: c.invitationId, userId: c.actorId } },
        { type: 'MemberAdded', data: { workspaceId, userId: c.actorId, role: inv.role, joinedAt: c.now.toISOString(), invitationId: c.invitationId } },
      ];
    }
    case 'RevokeInvitation': {
      authorize(s, c.actorId, 'ADMIN');
      const inv = s.invitations.get(c.invitationId);
      // Accepted (or never created here): nothing pending to revoke.
      if (!inv || inv.accepted) throw domainError('INVITATION_NOT_FOUND', 'Invitation not found.');
      return [{ type: 'InvitationRevoked', data: { workspaceId, invitationId: c.invitationId, revokedAt: c.now.toISOString() } }];
    }
    case 'TransferOwnership': {
      authorize(s, c.actorId, 'OWNER');
      const target = s.members.get(c.userId);
      if (target === undefined) throw domainError('MEMBER_NOT_FOUND', 'The user is not a member of this workspace.');
      if (c.userId === c.actorId) throw domainError('VALIDATION_ERROR', 'You already own this workspace: choose another member.', { field: 'userId' });
      return [{ type: 'OwnershipTransferred', data: { workspaceId, fromUserId: c.actorId, toUserId: c.userId, previousRole: target, transferredAt: c.now.toISOString() } }];
    }
    case 'CreateTag': {
      authorize(s, c.actorId, 'ADMIN');
      if ([...s.tags.values()].some((t) => t.name.toLowerCase() === c.name.toLowerCase())) throw domainError('TAG_EXISTS', 'A tag with this name already exists.');
      return [{ type: 'TagCreated', data: { workspaceId, tagId: c.tagId, name: c.name, color: c.color } }];
    }
    case 'UpdateTag': {
      authorize(s, c.actorId, 'ADMIN');
      const tag = s.tags.get(c.tagId);
      if (!tag) throw domainError('TAG_NOT_FOUND', 'Tag not found.');
      const name = c.name ?? tag.name;
      const color = c.color ?? tag.color;
      if ([...s.tags].some(([id, t]) => id !== c.tagId && t.name.toLowerCase() === name.toLowerCase())) {
        throw domainError('TAG_EXISTS', 'A tag with this name already exists.');
      }
      if (name === tag.name && color === tag.color) return [];
      return [{ type: 'TagUpdated', data: { workspaceId, tagId: c.tagId, name, color } }];
    }
    case 'DeleteTag':
      authorize(s, c.actorId, 'ADMIN');
      if (!s.tags.has(c.tagId)) throw domainError('TAG_NOT_FOUND', 'Tag not found.');
      return [{ type: 'TagDeleted', data: { workspaceId, tagId: c.tagId } }];
    default: {
      const _never: never = c;
      return _never;
    }
  }
}

export const workspaceDecider = { initialState, evolve, decide };
