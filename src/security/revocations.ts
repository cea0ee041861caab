import { DomainEvent } from '../domain/event';
import { Role } from '../domain/workspace/events';

const RANK: ReadonlyMap<Role, number> = new Map<Role, number>([
  ['MEMBER', 1],
  ['ADMIN', 2],
  ['OWNER', 3],
]);

/** A member's role lowered by the event (`<workspaceId>:<userId>` and the role now), or null. */
function demotedBy(e: Pick<DomainEvent, 'type' | 'data'>): { id: string; role: Role } | null {
  const d = e.data as Record<string, unknown>;
  if (e.type === 'MemberRoleChanged') {
    const role = d.role as Role;
    const previous = d.previousRole as Role;
    return (RANK.get(role) ?? 0) < (RANK.get(previous) ?? 0) ? { id: memberKey(String(d.workspaceId), String(d.userId)), role } : null;
  }
  // The owner who hands the workspace over becomes an admin.
  if (e.type === 'OwnershipTransferred') return { id: memberKey(String(d.workspaceId), String(d.fromUserId)), role: 'ADMIN' };
  return null;
}

/** What a revocation withdraws: an API key, a session, a public search link, a membership (`<workspaceId>:<userId>`), a deleted workspace (every membership and link of it). */
export type RevokedKind = 'api_key' | 'session' | 'link' | 'member' | 'workspace';

/** The credential or access a revocation event withdraws, or null for any other event. */
function revokedBy(e: Pick<DomainEvent, 'type' | 'data'>): { kind: RevokedKind; id: string } | null {
  const d = e.data as Record<string, unknown>;
  switch (e.type) {
    case 'ApiKeyRevoked':
      return { kind: 'api_key', id: String(d.keyId) };
    case 'SessionRevoked':
      return { kind: 'session', id: String(d.sessionId) };
    case 'LinkRevoked':
      return { kind: 'link', id: String(d.linkId) };
    case 'MemberRemoved':
      return { kind: 'member', id: memberKey(String(d.workspaceId), String(d.userId)) };
    case 'WorkspaceDeleted':
      return { kind: 'workspace', id: String(d.workspaceId) };
    default:
      return null;
  }
}

export const memberKey = (workspaceId: string, userId: string): string => `${workspaceId}:${userId}`;

/**
 * Revocations this process appended whose events the read models may not have applied yet.
 *
 * Authentication, link resolution and membership checks read the read models (and the auth
 * cache, emptied when they apply an event). A revocation answers after waiting at most
 * KB_READ_YOUR_WRITES_MS for them; were they to lag beyond that, the revoked key, session or
 * link, or the removed member, would keep working until they caught up. So every revocation
 * appended through the command handler is remembered here at once (handleCommand tells the
 * store's append observers before it returns), and those checks refuse what is in here
 * whatever the read models still say. An entry is dropped once every projection has applied
 * the log up to its position (then the read models refuse it themselves): the set holds only
 * the revocations of the current lag, however long the process runs.
 *
 * Per process, not shared: in a split deployment (KB_ROLE=api with the projections in a
 * projector process) only the API process that ran the revocation's command knows it at once;
 * another API process refuses the credential once the projector has applied the event (its
 * runner polls the stored checkpoints, and it reads the read models every time). What holds
 * everywhere is the bounded wait: a revocation answered in time is refused by every process.
 *
 * A member removed and added again while the projections lag is refused until they apply the
 * removal (failing closed: never the role the lagging read model still shows). A member whose
 * role this process lowered (or an owner who handed the workspace over) has at most the new
 * role until they apply it (`roleCap`).
 */
export class Revocations {
  /** By `<kind>:<id>`: the log position of the append that revoked it. */
  private readonly entries = new Map<string, number>();
  /** By `<workspaceId>:<userId>`: the role a demotion this process appended lowered it to, and its position. */
  private readonly demotions = new Map<string, { role: Role; position: number }>();
  /** The applied position the entries were last pruned at (no need to walk them again below it). */
  private prunedAt = -1;

  /** `appliedPosition`: the position every projection of the deployment has applied (ProjectionRunner.lowWatermark). */
  constructor(private readonly appliedPosition: () => number) {}

  /** Events just appended, the last of them at `position`. */
  appended(events: readonly Pick<DomainEvent, 'type' | 'data'>[], position: number): void {
    if (position <= 0) return;
    for (const e of events) {
      const demoted = demotedBy(e);
      if (demoted && this.appliedPosition() < position) {
        this.demotions.set(demoted.id, { role: demoted.role, position });
        this.prunedAt = -1;
      }
      const r = revokedBy(e);
      if (!r) continue;
      if (this.appliedPosition() >= position) return;
      const key = `${r.kind}:${r.id}`;
      this.entries.set(key, Math.max(position, this.entries.get(key) ?? 0));
      this.prunedAt = -1;
    }
  }

  /** Whether this process removed the user from the workspace, or deleted the workspace, and the read models may not show it yet. */
  isMemberRevoked(workspaceId: string, userId: string): boolean {
    return this.isRevoked('member', memberKey(workspaceId, userId)) || this.isRevoked('workspace', workspaceId);
  }

  /**
   * The role a member may have at most now, given the read models' `role`: lower when this
   * process demoted them and the read models may not show it yet (a later promotion by this
   * process replaces the cap only once they apply it: failing closed).
   */
  roleCap(workspaceId: string, userId: string, role: Role | null): Role | null {
    if (role === null || this.demotions.size === 0) return role;
    this.prune();
    const d = this.demotions.get(memberKey(workspaceId, userId));
    return d !== undefined && (RANK.get(d.role) ?? 0) < (RANK.get(role) ?? 0) ? d.role : role;
  }

  /** Whether this process revoked it and the read models may not show it yet. */
  isRevoked(kind: RevokedKind, id: string): boolean {
    if (this.entries.size === 0) return false;
    this.prune();
    return this.entries.has(`${kind}:${id}`);
  }

  /** Drops the entries every projection has applied. */
  prune(): void {
    if (this.entries.size === 0 && this.demotions.size === 0) return;
    const applied = this.appliedPosition();
    if (applied === this.prunedAt) return;
    for (const [key, position] of this.entries) if (position <= applied) this.entries.delete(key);
    for (const [key, d] of this.demotions) if (d.position <= applied) this.demotions.delete(key);
    this.prunedAt = applied;
  }

  /** Entries still kept (those the projections have not all applied). */
  get size(): number {
    this.prune();
    return this.entries.size + this.demotions.size;
  }
}
