import { AppContext } from '../../src/app/context';

/** The workspace queries read only the read models. */
type Deps = Pick<AppContext, 'readStore'>;
import { DomainError } from '../../src/domain/errors';
import { Role } from '../../src/domain/workspace/events';
import { invitationsCollection, membersCollection, memberId, tagsCollection, tagViewId, workspacesCollection, WorkspaceView } from '../../projections/workspace/workspaceProjection';
import { usersCollection } from '../../projections/user/userProjection';
import { documentsCollection } from '../../projections/document/documentProjection';
import { identityRequirementUnmet } from './membership';

/** Documents of a workspace (a deleted one has left the read model). */
async function documentCount(ctx: Deps, workspaceId: string): Promise<number> {
  return documentsCollection(ctx.readStore).count({ workspaceId });
}

async function summary(ctx: Deps, w: WorkspaceView, role: Role) {
  return {
    id: w.id,
    name: w.name,
    role,
    createdAt: w.createdAt,
    documentCount: await documentCount(ctx, w.id),
    memberCount: await membersCollection(ctx.readStore).count({ workspaceId: w.id }),
  };
}

/** Why a workspace of the user is left out of their list: the error code its routes answer. */
export type WithheldReason = 'MFA_ENROLMENT_REQUIRED' | 'EMAIL_NOT_VERIFIED';

/**
 * The workspaces the user can access (spec 4.2), oldest first. A workspace whose
 * `requireMfa` / `requireVerifiedEmail` the caller does not meet (with `authMethod`: API keys
 * are exempt from `requireMfa`) answers 403 on every route of its own, so it is left out of
 * the list too (before, its name and counts were listed): `withheld` counts them by reason,
 * so the client can tell its user that enrolling a second factor or verifying their e-mail
 * brings them back.
 */
export async function listWorkspaces(ctx: Deps, userId: string, authMethod: string): Promise<{ workspaces: Awaited<ReturnType<typeof summary>>[]; withheld: Map<WithheldReason, number> }> {
  const memberships = await membersCollection(ctx.readStore).find({ userId });
  const workspaces = await workspacesCollection(ctx.readStore).getMany(memberships.map((m) => m.workspaceId));
  const byId = new Map(workspaces.map((w) => [w.id, w]));
  // The user is read once, and only when some workspace asks something of them.
  let user: ReturnType<ReturnType<typeof usersCollection>['get']> | undefined;
  const readUser = () => (user ??= usersCollection(ctx.readStore).get(userId));
  const out = [];
  const withheld = new Map<WithheldReason, number>();
  for (const m of memberships) {
    const w = byId.get(m.workspaceId);
    if (!w) continue;
    const unmet = await identityRequirementUnmet(w.settings, authMethod, readUser);
    if (unmet) {
      const reason: WithheldReason = unmet === 'mfa' ? 'MFA_ENROLMENT_REQUIRED' : 'EMAIL_NOT_VERIFIED';
      withheld.set(reason, (withheld.get(reason) ?? 0) + 1);
      continue;
    }
    out.push(await summary(ctx, w, m.role));
  }
  out.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : 1));
  return { workspaces: out, withheld };
}

export async function getWorkspace(ctx: Deps, workspaceId: string, userId: string) {
  const m = await membersCollection(ctx.readStore).get(memberId(workspaceId, userId));
  const w = m ? await workspacesCollection(ctx.readStore).get(workspaceId) : null;
  if (!m || !w) throw new DomainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
  return { ...(await summary(ctx, w, m.role)), settings: w.settings };
}

export async function listMembers(ctx: Deps, workspaceId: string) {
  const members = await membersCollection(ctx.readStore).find({ workspaceId }, { sort: [{ field: 'joinedAt', direction: 'asc' }] });
  const users = await usersCollection(ctx.readStore).getMany(members.map((m) => m.userId));
  const byId = new Map(users.map((u) => [u.id, u]));
  return members.map((m) => ({ userId: m.userId, email: byId.get(m.userId)?.email ?? '', name: byId.get(m.userId)?.name ?? '', role: m.role, joinedAt: m.joinedAt }));
}

export async function getInvitation(ctx: Deps, invitationId: string) {
  return invitationsCollection(ctx.readStore).get(invitationId);
}

/** At most this many pending invitations are listed (newest first); the rest are counted. */
export const MAX_LISTED_INVITATIONS = 200;

/**
 * Invitations of a workspace not yet accepted (nor revoked: a revoked one leaves the read
 * model), newest first, each PENDING or EXPIRED at `now`. Bounded: the newest
 * MAX_LISTED_INVITATIONS, with the total.
 */
export async function listPendingInvitations(ctx: Deps, workspaceId: string, now: Date) {
  const col = invitationsCollection(ctx.readStore);
  const filter = { workspaceId, accepted: false };
  const rows = await col.find(filter, { sort: [{ field: 'createdAt', direction: 'desc' }, { field: 'id', direction: 'asc' }], limit: MAX_LISTED_INVITATIONS });
  const total = rows.length < MAX_LISTED_INVITATIONS ? rows.length : await col.count(filter);
  return {
    data: rows.map((i) => ({ id: i.id, email: i.email, role: i.role, createdAt: i.createdAt, expiresAt: i.expiresAt, status: Date.parse(i.expiresAt) <= now.getTime() ? ('EXPIRED' as const) : ('PENDING' as const) })),
    total,
  };
}

export async function listTags(ctx: Deps, workspaceId: string) {
  const tags = await tagsCollection(ctx.readStore).find({ workspaceId }, { sort: [{ field: 'name', direction: 'asc' }] });
  return tags.map((t) => ({ id: t.tagId, name: t.name, color: t.color }));
}

/** One tag of a workspace (null when the workspace has no such tag): one row, not the list. */
export async function tagOf(ctx: Deps, workspaceId: string, tagId: string): Promise<{ id: string; name: string; color: string } | null> {
  const t = await tagsCollection(ctx.readStore).get(tagViewId(workspaceId, tagId));
  return t && t.workspaceId === workspaceId ? { id: t.tagId, name: t.name, color: t.color } : null;
}

/** What a search-link command needs from outside its stream: the workspace's switch and its tag ids. */
export async function workspaceLinkFacts(ctx: Deps, workspaceId: string): Promise<{ linksEnabled: boolean; workspaceTags: string[] }> {
  const ws = await workspacesCollection(ctx.readStore).get(workspaceId);
  if (!ws) throw new DomainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
  const tags = await tagsCollection(ctx.readStore).find({ workspaceId });
  return { linksEnabled: ws.settings.allowPublicSearchLinks, workspaceTags: tags.map((x) => x.tagId) };
}

/** The user's role in a workspace (null: not a member). */
export async function memberRole(ctx: Deps & Partial<Pick<AppContext, 'revocations'>>, workspaceId: string, userId: string): Promise<Role | null> {
  // A removal this process appended counts at once, though the read models may still show the member.
  if (ctx.revocations?.isMemberRevoked(workspaceId, userId)) return null;
  const role = (await membersCollection(ctx.readStore).get(memberId(workspaceId, userId)))?.role ?? null;
  return ctx.revocations ? ctx.revocations.roleCap(workspaceId, userId, role) : role;
}
