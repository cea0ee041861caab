import { AppContext } from '../../src/app/context';
import { DomainError } from '../../src/domain/errors';
import { ProcessingStatus, Purpose } from '../../src/domain/document/events';
import { Filter } from '../../src/ports/readStore';
import { documentsCollection, DocumentView } from '../../projections/document/documentProjection';
import { membersCollection, memberId, tagsCollection, tagViewId } from '../../projections/workspace/workspaceProjection';

export interface DocumentListQuery {
  workspaceId: string;
  page: number;
  limit: number;
  status?: ProcessingStatus;
  purpose?: Purpose;
  tags?: string[];
  search?: string;
}

/**
 * VERIFIED means searchable: the documents read model and the search index follow the log
 * separately, so before showing VERIFIED, wait (bounded) until every projection, the
 * index included, has applied that DocumentVerified.
 */
async function untilSearchable(ctx: AppContext, docs: DocumentView[]): Promise<void> {
  const position = Math.max(0, ...docs.map((d) => (d.processingStatus === 'VERIFIED' ? (d.verifiedPosition ?? 0) : 0)));
  await ctx.runner.waitFor(position, ctx.config.readYourWritesMs);
}

export async function listDocuments(ctx: AppContext, q: DocumentListQuery) {
  const filter: Filter = { workspaceId: q.workspaceId };
  if (q.status) filter.processingStatus = q.status;
  if (q.purpose) filter.purpose = q.purpose;
  if (q.tags && q.tags.length > 0) filter.tags = { $containsAny: q.tags };
  if (q.search) filter.title = { $ilike: q.search };
  const docs = documentsCollection(ctx.readStore);
  const [total, rows] = await Promise.all([
    docs.count(filter),
    docs.find(filter, {
      sort: [
        { field: 'createdAt', direction: 'desc' },
        { field: 'id', direction: 'asc' },
      ],
      skip: (q.page - 1) * q.limit,
      limit: q.limit,
    }),
  ]);
  await untilSearchable(ctx, rows);
  return {
    data: rows.map((d) => ({ id: d.id, title: d.title, purpose: d.purpose, processingStatus: d.processingStatus, tags: d.tags, createdAt: d.createdAt, updatedAt: d.updatedAt })),
    pagination: { page: q.page, limit: q.limit, total, pages: Math.ceil(total / q.limit) },
  };
}

/** The read-model row of a document in a workspace, or 404 DOCUMENT_NOT_FOUND. */
export async function documentIn(ctx: AppContext, workspaceId: string, documentId: string): Promise<DocumentView> {
  const d = await documentsCollection(ctx.readStore).get(documentId);
  if (!d || d.workspaceId !== workspaceId) throw new DomainError('DOCUMENT_NOT_FOUND', 'Document not found.');
  return d;
}

/** A document in any workspace the user is a member of (not revealing others'), or 404. */
export async function documentForUser(ctx: AppContext, userId: string, documentId: string): Promise<DocumentView> {
  const d = await documentsCollection(ctx.readStore).get(documentId);
  const member = d ? await membersCollection(ctx.readStore).get(memberId(d.workspaceId, userId)) : null;
  if (!d || !member) throw new DomainError('DOCUMENT_NOT_FOUND', 'Document not found.');
  return d;
}

/** The get response: tags as objects, counts, and `error` when FAILED. */
export async function documentDetail(ctx: AppContext, d: DocumentView) {
  await untilSearchable(ctx, [d]);
  // Rows of the document's own workspace only: a tag id never resolves to another tenant's tag.
  const tags = d.tags.length ? await tagsCollection(ctx.readStore).getMany(d.tags.map((t) => tagViewId(d.workspaceId, t))) : [];
  const byId = new Map(tags.filter((t) => t.workspaceId === d.workspaceId).map((t) => [t.tagId, t]));
  return {
    id: d.id,
    workspaceId: d.workspaceId,
    title: d.title,
    filename: d.filename,
    mimeType: d.mimeType,
    size: d.size,
    purpose: d.purpose,
    uploadStatus: d.uploadStatus,
    processingStatus: d.processingStatus,
    tags: d.tags.flatMap((id) => {
      const t = byId.get(id);
      return t ? [{ id: t.tagId, name: t.name, color: t.color }] : [];
    }),
    chunkCount: d.chunkCount,
    tokenCount: d.tokenCount,
    sizeBytes: d.sizeBytes,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
    ...(d.processingStatus === 'FAILED' && d.error ? { error: d.error } : {}),
  };
}

/** Tag ids that do not name a tag of the workspace. */
export async function unknownTags(ctx: AppContext, workspaceId: string, tagIds: string[]): Promise<string[]> {
  if (tagIds.length === 0) return [];
  const found = await tagsCollection(ctx.readStore).getMany([...new Set(tagIds)].map((t) => tagViewId(workspaceId, t)));
  const ok = new Set(found.filter((t) => t.workspaceId === workspaceId).map((t) => t.tagId));
  return tagIds.filter((t) => !ok.has(t));
}

/** Documents still using a stored file (content-addressed: several documents may share one). */
export async function blobUsers(ctx: AppContext, sha256: string): Promise<number> {
  return documentsCollection(ctx.readStore).count({ blobSha256: sha256 });
}

/** Whether any document uses this stored file. */
export async function blobInUse(ctx: AppContext, sha256: string): Promise<boolean> {
  return (await blobUsers(ctx, sha256)) > 0;
}

/** The get response of a document in a workspace, or 404 DOCUMENT_NOT_FOUND. */
export async function documentDetailIn(ctx: AppContext, workspaceId: string, documentId: string) {
  return documentDetail(ctx, await documentIn(ctx, workspaceId, documentId));
}

/** The get response of a document in any workspace the user is a member of, or 404. */
export async function documentDetailForUser(ctx: AppContext, userId: string, documentId: string) {
  return documentDetail(ctx, await documentForUser(ctx, userId, documentId));
}
