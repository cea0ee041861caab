import { Readable } from 'node:stream';
import { AppContext } from '../../src/app/context';
import { DomainError } from '../../src/domain/errors';
import { documentForUser } from './documentQueries';

export interface DocumentFile {
  filename: string;
  mimeType: string;
  stream: Readable;
}

/**
 * The file a document was created from (the original upload, or the text it was created
 * from), for a member of its workspace. 404 DOCUMENT_NOT_FOUND when the user may not read
 * the document, it is deleted, or its file is gone (erased).
 */
export async function documentFileForUser(
  ctx: AppContext,
  userId: string,
  documentId: string,
  /** What else the caller must meet in the document's workspace (its identity settings), checked before the file is opened. */
  admitted: (workspaceId: string) => Promise<void> = async () => undefined,
): Promise<DocumentFile> {
  const d = await documentForUser(ctx, userId, documentId);
  await admitted(d.workspaceId);
  let stream: Readable;
  try {
    stream = await ctx.blobStore.get(d.blobSha256);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'BLOB_NOT_FOUND') throw new DomainError('DOCUMENT_NOT_FOUND', 'Document not found.');
    throw err;
  }
  return { filename: d.filename, mimeType: d.mimeType, stream };
}
