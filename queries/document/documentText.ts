import { AppContext } from '../../src/app/context';
import { RecordedEvent } from '../../src/domain/event';
import { DomainError } from '../../src/domain/errors';
import { joinSections } from '../../src/domain/document/eventParts';
import { DocumentEvent, documentStream, ExtractedSectionData } from '../../src/domain/document/events';

/** The text search used for a document: that of its last VERIFIED run, now or at a past time. */
export interface DocumentText {
  documentId: string;
  /** The time asked for; null for now. */
  asOf: string | null;
  /** The run whose text this is; null when no run had been VERIFIED by then (text null too). */
  processingId: string | null;
  /** When that run was VERIFIED. */
  verifiedAt: string | null;
  tokenCount: number;
  /** UTF-8 bytes of the text. */
  sizeBytes: number;
  text: string | null;
}

type Extracted = DocumentEvent & { type: 'DocumentTextExtracted' };

/** What the text of a run needs: its workspace (the upload), the text, the verification and a deletion. Not the chunks and vectors (most of a large document's stream). */
const TEXT_EVENTS: ReadonlySet<string> = new Set(['DocumentUploaded', 'DocumentTextExtracted', 'DocumentVerified', 'DocumentDeleted']);

/**
 * The extracted text of a document of this workspace as search held it at `asOf` (default:
 * now): the text of the last run VERIFIED by then, its parts joined as the processor cut them.
 * 404 DOCUMENT_NOT_FOUND when the document did not exist then (not yet uploaded, already
 * deleted) or belongs to another workspace; 410 DOCUMENT_TEXT_ERASED when the document was
 * deleted since: its text was crypto-shredded with it, and only its metadata history remains.
 * The caller checks membership.
 */
export async function documentTextIn(ctx: AppContext, workspaceId: string, documentId: string, asOf?: Date): Promise<DocumentText> {
  const notFound = () => new DomainError('DOCUMENT_NOT_FOUND', asOf ? 'Document not found at that time.' : 'Document not found.');
  const limit = asOf?.toISOString();
  const all = (await ctx.eventStore.readStream(documentStream(documentId), 0, TEXT_EVENTS)) as RecordedEvent[];
  const events = (limit === undefined ? all : all.filter((e) => e.metadata.occurredAt <= limit)) as unknown as (DocumentEvent & RecordedEvent)[];
  if (events.length === 0 || events[0].data.workspaceId !== workspaceId) throw notFound();
  if (events.some((e) => e.type === 'DocumentDeleted')) throw notFound();
  // Deleted since: its text is erased, whether or not the erasure service has destroyed the key yet.
  const erasedText = () => new DomainError('DOCUMENT_TEXT_ERASED', 'The document was deleted since; its text was erased with it (its metadata history remains).');
  if (all.some((e) => e.type === 'DocumentDeleted')) throw erasedText();
  const verified = [...events].reverse().find((e): e is DocumentEvent & RecordedEvent & { type: 'DocumentVerified' } => e.type === 'DocumentVerified');
  const base = { documentId, asOf: limit ?? null };
  if (!verified) return { ...base, processingId: null, verifiedAt: null, tokenCount: 0, sizeBytes: 0, text: null };
  const { processingId } = verified.data;
  const parts = events.filter((e): e is Extracted & RecordedEvent => e.type === 'DocumentTextExtracted' && e.data.processingId === processingId).sort((a, b) => (a.data.part ?? 0) - (b.data.part ?? 0));
  if (parts.some((e) => (e.data as { erased?: boolean }).erased === true)) throw erasedText();
  const sections: ExtractedSectionData[] = parts.flatMap((e) => e.data.sections);
  return {
    ...base,
    processingId,
    verifiedAt: verified.metadata.occurredAt,
    tokenCount: parts[0]?.data.tokenCount ?? 0,
    sizeBytes: parts[0]?.data.sizeBytes ?? 0,
    text: joinSections(sections),
  };
}
