import { ReadStore } from '../../src/ports/readStore';
import { Role } from '../../src/domain/workspace/events';
import { memberId, membersCollection } from '../../projections/workspace/workspaceProjection';

/** The user's role in the workspace, or null when they are not a member. */
export async function memberRole(store: ReadStore, workspaceId: string, userId: string): Promise<Role | null> {
  const m = await membersCollection(store).get(memberId(workspaceId, userId));
  return m ? m.role : null;
}
