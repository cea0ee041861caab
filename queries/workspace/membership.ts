import { ReadStore } from '../../src/ports/readStore';
import { Role, WorkspaceSettings } from '../../src/domain/workspace/events';
import { memberId, membersCollection, workspacesCollection } from '../../projections/workspace/workspaceProjection';
import { usersCollection, UserView } from '../../projections/user/userProjection';

/**
 * What a workspace's identity settings ask of this member, or null when it asks nothing:
 * 'mfa' (settings.requireMfa, for sessions only: API keys stay usable) or 'verified_email'.
 */
export async function unmetIdentityRequirement(store: ReadStore, workspaceId: string, userId: string, authMethod: string): Promise<'mfa' | 'verified_email' | null> {
  const w = await workspacesCollection(store).get(workspaceId);
  return identityRequirementUnmet(w?.settings, authMethod, () => usersCollection(store).get(userId));
}

/** The rule of unmetIdentityRequirement, given the workspace's settings (undefined: no workspace) and a way to read the user (only read when needed). */
export async function identityRequirementUnmet(
  settings: Pick<WorkspaceSettings, 'requireMfa' | 'requireVerifiedEmail'> | undefined,
  authMethod: string,
  user: () => Promise<Pick<UserView, 'emailVerified' | 'mfa'> | null>,
): Promise<'mfa' | 'verified_email' | null> {
  const needMfa = settings?.requireMfa === true && authMethod === 'session';
  const needVerified = settings?.requireVerifiedEmail === true;
  if (!needMfa && !needVerified) return null;
  const u = await user();
  if (needVerified && u?.emailVerified !== true) return 'verified_email';
  if (needMfa && u?.mfa !== 'on') return 'mfa';
  return null;
}

/** The user's role in the workspace, or null when they are not a member. */
export async function memberRole(store: ReadStore, workspaceId: string, userId: string): Promise<Role | null> {
  const m = await membersCollection(store).get(memberId(workspaceId, userId));
  return m ? m.role : null;
}
