import fc from 'fast-check';
import { workspaceDecider, WorkspaceCommand, WorkspaceState } from '../../src/domain/workspace/decider';
import { Role, WorkspaceEvent } from '../../src/domain/workspace/events';
import { BUILTIN_NAMES, idFrom, runCommands, RUNS } from '../support/property';

const now = new Date('2026-01-01T00:00:00.000Z');
const later = new Date('2026-01-20T00:00:00.000Z');
const USERS = ['owner', 'u1', 'u2', 'u3'];
const user = idFrom(USERS);
const tag = idFrom(['t1', 't2', 't3']);
const invitation = idFrom(['i1', 'i2']);
const role = fc.constantFrom<Role>('OWNER', 'ADMIN', 'MEMBER');
const tagName = fc.constantFrom('Legal', 'legal', 'HR', 'Ops', 'constructor', '__proto__');
const email = fc.constantFrom('u1@example.com', 'u2@example.com', 'x@example.com');

const command: fc.Arbitrary<WorkspaceCommand> = fc.oneof(
  fc.record({ type: fc.constant('CreateWorkspace' as const), workspaceId: fc.constant('ws'), actorId: user, name: fc.constant('W'), now: fc.constant(now) }),
  fc.record({ type: fc.constant('UpdateWorkspace' as const), actorId: user, name: fc.constantFrom('W', 'X'), now: fc.constant(now) }),
  fc.record({ type: fc.constant('DeleteWorkspace' as const), actorId: user, now: fc.constant(now) }),
  fc.record({ type: fc.constant('AddMember' as const), actorId: user, userId: user, role, now: fc.constant(now) }),
  fc.record({ type: fc.constant('ChangeMemberRole' as const), actorId: user, userId: user, role }),
  fc.record({ type: fc.constant('RemoveMember' as const), actorId: user, userId: user }),
  fc.record({ type: fc.constant('InviteMember' as const), actorId: user, invitationId: invitation, email, role, now: fc.constant(now) }),
  fc.record({ type: fc.constant('AcceptInvitation' as const), actorId: user, actorEmail: email, invitationId: invitation, now: fc.constantFrom(now, later) }),
  fc.record({ type: fc.constant('RevokeInvitation' as const), actorId: user, invitationId: invitation, now: fc.constant(now) }),
  fc.record({ type: fc.constant('TransferOwnership' as const), actorId: user, userId: user, now: fc.constant(now) }),
  fc.record({ type: fc.constant('CreateTag' as const), actorId: user, tagId: tag, name: tagName, color: fc.constant('#112233') }),
  fc.record({ type: fc.constant('UpdateTag' as const), actorId: user, tagId: tag, name: fc.option(tagName, { nil: undefined }), color: fc.option(fc.constant('#445566'), { nil: undefined }) }),
  fc.record({ type: fc.constant('DeleteTag' as const), actorId: user, tagId: tag }),
);

const create: WorkspaceCommand = { type: 'CreateWorkspace', workspaceId: 'ws', actorId: 'owner', name: 'W', now };

/** What the events said, kept by the test itself: the ids each event created. */
interface Model {
  status: WorkspaceState['status'];
  members: Map<string, Role>;
  tags: Set<string>;
  invitations: Set<string>;
}

function apply(m: Model, e: WorkspaceEvent): void {
  switch (e.type) {
    case 'WorkspaceCreated':
      m.status = 'active';
      m.members.set(e.data.ownerId, 'OWNER');
      break;
    case 'WorkspaceDeleted':
      m.status = 'deleted';
      break;
    case 'MemberAdded':
      expect(m.members.has(e.data.userId)).toBe(false);
      m.members.set(e.data.userId, e.data.role);
      break;
    case 'MemberRoleChanged':
      expect(m.members.get(e.data.userId)).toBe(e.data.previousRole);
      m.members.set(e.data.userId, e.data.role);
      break;
    case 'MemberRemoved':
      expect(m.members.has(e.data.userId)).toBe(true);
      m.members.delete(e.data.userId);
      break;
    case 'InvitationCreated':
      m.invitations.add(e.data.invitationId);
      break;
    case 'InvitationAccepted':
      expect(m.invitations.has(e.data.invitationId)).toBe(true);
      break;
    case 'InvitationRevoked':
      expect(m.invitations.has(e.data.invitationId)).toBe(true);
      m.invitations.delete(e.data.invitationId);
      break;
    case 'OwnershipTransferred':
      expect(m.members.get(e.data.fromUserId)).toBe('OWNER');
      expect(m.members.get(e.data.toUserId)).toBe(e.data.previousRole);
      expect(e.data.toUserId).not.toBe(e.data.fromUserId);
      m.members.set(e.data.toUserId, 'OWNER');
      m.members.set(e.data.fromUserId, 'ADMIN');
      break;
    case 'TagCreated':
      m.tags.add(e.data.tagId);
      break;
    case 'TagUpdated':
      expect(m.tags.has(e.data.tagId)).toBe(true);
      break;
    case 'TagDeleted':
      expect(m.tags.has(e.data.tagId)).toBe(true);
      m.tags.delete(e.data.tagId);
      break;
    default:
      break;
  }
}

describe('workspace decider (property-based)', () => {
  it('any command sequence: only DomainErrors, events name only ids that exist, an active workspace always has an OWNER, state holds only created ids', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.array(command, { maxLength: 40 }), (startCreated, commands) => {
        const model: Model = { status: 'none', members: new Map(), tags: new Set(), invitations: new Set() };
        runCommands(workspaceDecider, startCreated ? [create, ...commands] : commands, ({ after, events, error }) => {
          if (error) expect(events).toEqual([]);
          for (const e of events) apply(model, e);
          expect(after.status).toBe(model.status);
          expect([...after.members].sort()).toEqual([...model.members].sort());
          expect([...after.tags.keys()].sort()).toEqual([...model.tags].sort());
          expect([...after.invitations.keys()].sort()).toEqual([...model.invitations].sort());
          if (after.status === 'active') expect([...after.members.values()].filter((r) => r === 'OWNER').length).toBeGreaterThanOrEqual(1);
        });
      }),
      RUNS,
    );
  });

  it('a built-in name never created answers as missing: not a member, not a tag, not an invitation', () => {
    fc.assert(
      fc.property(fc.constantFrom(...BUILTIN_NAMES), role, (name, r) => {
        const s = [{ type: 'WorkspaceCreated', data: { workspaceId: 'ws', name: 'W', ownerId: 'owner', createdAt: now.toISOString(), settings: { allowPublicSearchLinks: true, defaultDocumentPurpose: 'KNOWLEDGE' } } } as WorkspaceEvent].reduce(
          workspaceDecider.evolve,
          workspaceDecider.initialState(),
        );
        const codeOf = (c: WorkspaceCommand) => {
          try {
            workspaceDecider.decide(c, s);
            return 'ACCEPTED';
          } catch (err) {
            return (err as { code?: string }).code ?? String(err);
          }
        };
        expect(codeOf({ type: 'ChangeMemberRole', actorId: 'owner', userId: name, role: r })).toBe('MEMBER_NOT_FOUND');
        expect(codeOf({ type: 'RemoveMember', actorId: 'owner', userId: name })).toBe('MEMBER_NOT_FOUND');
        expect(codeOf({ type: 'UpdateTag', actorId: 'owner', tagId: name, name: 'x', color: '#000000' })).toBe('TAG_NOT_FOUND');
        expect(codeOf({ type: 'DeleteTag', actorId: 'owner', tagId: name })).toBe('TAG_NOT_FOUND');
        expect(codeOf({ type: 'AcceptInvitation', actorId: 'u1', actorEmail: 'u1@example.com', invitationId: name, now })).toBe('INVITATION_NOT_FOUND');
        expect(codeOf({ type: 'UpdateWorkspace', actorId: name, name: 'X', now })).toBe('WORKSPACE_NOT_FOUND');
        expect(codeOf({ type: 'RevokeInvitation', actorId: 'owner', invitationId: name, now })).toBe('INVITATION_NOT_FOUND');
        expect(codeOf({ type: 'TransferOwnership', actorId: 'owner', userId: name, now })).toBe('MEMBER_NOT_FOUND');
      }),
      { numRuns: 50 },
    );
  });
});
