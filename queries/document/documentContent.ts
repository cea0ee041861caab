import { AppContext } from '../../src/app/context';
import { loadState } from '../../src/core/commandHandler';
import { documentDecider } from '../../src/domain/document/decider';
import { DocumentEvent, documentStream } from '../../src/domain/document/events';
import { DomainError } from '../../src/domain/errors';

/** The current text of an editable document, and the time to send back as `expectedUpdatedAt`. */
export interface DocumentContent {
  content: string;
  /** When the text last changed (the upload or the last auto-save): what DOCUMENT_LOCKED compares against. */
  updatedAt: string;
  format: 'markdown' | 'text';
}

const notFound = () => new DomainError('DOCUMENT_NOT_FOUND', 'Document not found.');

/** A stream read whole, stopping with DOCUMENT_NOT_FOUND past `maxBytes` (the upload limit: no stored file is larger). */
async function readText(ctx: AppContext, sha256: string, maxBytes: number): Promise<string> {
  let stream;
  try {
    stream = await ctx.blobStore.get(sha256);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'BLOB_NOT_FOUND') throw notFound();
    throw err;
  }
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      stream.destroy();
      throw new DomainError('PAYLOAD_TOO_LARGE', `The document's text is larger than ${maxBytes} bytes.`);
    }
    parts.push(chunk);
  }
  // UTF-8 as the extractor reads it (a BOM is dropped; invalid bytes become U+FFFD).
  return new TextDecoder('utf-8').decode(Buffer.concat(parts));
}

/**
 * The editor's starting point: the current text of a .txt or .md document of this workspace
 * (the last auto-saved content, or else the uploaded file) with the time it last changed.
 * 404 DOCUMENT_NOT_FOUND when the document is not in the workspace or is deleted; 400
 * VALIDATION_ERROR for documents that cannot be edited (pdf, docx, doc). The caller checks
 * membership.
 */
export async function documentContentIn(ctx: AppContext, workspaceId: string, documentId: string): Promise<DocumentContent> {
  const { state } = await loadState(ctx.eventStore, documentStream(documentId), documentDecider);
  if (state.status !== 'active' || state.workspaceId !== workspaceId) throw notFound();
  if (state.kind !== 'md' && state.kind !== 'txt') {
    throw new DomainError('VALIDATION_ERROR', 'Only text (.txt) and Markdown (.md) documents have editable content.');
  }
  const format = state.kind === 'md' ? 'markdown' : 'text';
  if (state.source === 'content') {
    const events = (await ctx.eventStore.readStream(documentStream(documentId), 0, new Set(['DocumentContentUpdated']))) as unknown as DocumentEvent[];
    const last = [...events].reverse().find((e): e is DocumentEvent & { type: 'DocumentContentUpdated' } => e.type === 'DocumentContentUpdated');
    if (!last) throw notFound();
    return { content: last.data.content, updatedAt: state.contentUpdatedAt, format };
  }
  return { content: await readText(ctx, state.blobSha256, ctx.config.maxUploadBytes), updatedAt: state.contentUpdatedAt, format };
}
