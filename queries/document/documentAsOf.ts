import { AppContext } from '../../src/app/context';
import { documentAsOf } from '../../src/audit/timeTravel';
import { DomainError } from '../../src/domain/errors';
import { memberId, membersCollection } from '../../projections/workspace/workspaceProjection';

const notFoundThen = () => new DomainError('DOCUMENT_NOT_FOUND', 'Document not found at that time.');

/** A document of this workspace as it was at `asOf`, folded from its events (it may be deleted now); or 404. */
export async function documentInAsOf(ctx: AppContext, workspaceId: string, documentId: string, asOf: Date) {
  const past = await documentAsOf(ctx, documentId, asOf);
  if (!past || past.workspaceId !== workspaceId) throw notFoundThen();
  return past;
}

/** A document as it was at `asOf`, for a user who is a member today of the workspace it belonged to; or 404. */
export async function documentForUserAsOf(ctx: AppContext, userId: string, documentId: string, asOf: Date) {
  const past = await documentAsOf(ctx, documentId, asOf);
  if (!past || !(await membersCollection(ctx.readStore).get(memberId(past.workspaceId, userId)))) throw notFoundThen();
  return past;
}
