import { extractedSizeBound } from '../../src/domain/document/size';
import { AppContext } from '../../src/app/context';
import { DomainError } from '../../src/domain/errors';
import { instructionSetsCollection, InstructionSetView } from '../../projections/instructionSet/instructionSetProjection';
import { MAX_SET_BYTES } from '../../src/domain/instructionSet/events';
import { SetActor } from '../../src/domain/instructionSet/decider';
import { memberRole } from '../workspace/workspaceQueries';

export type { InstructionSetView };
import { documentsCollection, documentTextsCollection, DocumentView } from '../../projections/document/documentProjection';
import { isUuid } from '../../src/domain/ids';
import { workspacesCollection } from '../../projections/workspace/workspaceProjection';

/** The documents feature's read models, as far as instruction sets read them. */
export { extractedSizeBound };

/** Queries that read only the read models. */
type ReadDeps = Pick<AppContext, 'readStore'>;

export const publicUrlOf = (ctx: AppContext, v: Pick<InstructionSetView, 'id' | 'isPublic'>): string | null =>
  v.isPublic ? `${ctx.config.appUrl}/s/${v.id}` : null;

/** The set as listed (no documents). */
export function setSummary(ctx: AppContext, v: InstructionSetView) {
  return {
    id: v.id,
    workspaceId: v.workspaceId,
    name: v.name,
    description: v.description,
    isPublic: v.isPublic,
    publicUrl: publicUrlOf(ctx, v),
    documentCount: v.documentCount,
    totalSizeBytes: v.totalSizeBytes,
    createdAt: v.createdAt,
    updatedAt: v.updatedAt,
  };
}

/** The set with its ordered entries. */
export function setDetail(ctx: AppContext, v: InstructionSetView) {
  return {
    ...setSummary(ctx, v),
    documents: v.documents.map((d, order) => ({ documentId: d.documentId, title: d.title, sizeBytes: d.sizeBytes, purpose: d.purpose, order })),
  };
}

/** Why an entry of a set is not served by its public views: its document is not VERIFIED (or is gone). */
export interface UnavailableEntry {
  documentId: string;
  /** The document's processing status now; null when the document no longer exists. */
  processingStatus: DocumentView['processingStatus'] | null;
  /** The processing failure, when FAILED. */
  error?: { code: string; message: string };
}

/**
 * A set's entries served by its public views (in set order), and the others with the reason.
 * Only a VERIFIED document's text is accepted content: a document being re-processed, or
 * whose new text failed (NO_TEXT, say), contributes nothing until it is VERIFIED again.
 */
async function entryAvailability(ctx: AppContext, v: InstructionSetView): Promise<{ available: DocumentView[]; unavailable: UnavailableEntry[] }> {
  const docs = await documentsCollection(ctx.readStore).getMany(v.documents.map((d) => d.documentId));
  const byId = new Map(docs.filter((d) => d.workspaceId === v.workspaceId).map((d) => [d.id, d]));
  const available: DocumentView[] = [];
  const unavailable: UnavailableEntry[] = [];
  for (const entry of v.documents) {
    const d = byId.get(entry.documentId);
    if (d && d.processingStatus === 'VERIFIED') available.push(d);
    else unavailable.push({ documentId: entry.documentId, processingStatus: d?.processingStatus ?? null, ...(d?.processingStatus === 'FAILED' && d.error ? { error: { code: d.error.code, message: d.error.message } } : {}) });
  }
  return { available, unavailable };
}

/**
 * The set with its ordered entries, and the entries its public views leave out with the reason
 * (additive field), as the given read store holds them: the live one, or the scratch store a
 * past time is folded into (`instructionSetAsOf`).
 */
export async function setDetailNow(ctx: AppContext, v: InstructionSetView) {
  const { unavailable } = await entryAvailability(ctx, v);
  return { ...setDetail(ctx, v), unavailableDocuments: unavailable };
}

export async function findInstructionSet(ctx: ReadDeps, setId: string): Promise<InstructionSetView | null> {
  return instructionSetsCollection(ctx.readStore).get(setId);
}

export async function getInstructionSetOrThrow(ctx: ReadDeps, setId: string): Promise<InstructionSetView> {
  const v = await findInstructionSet(ctx, setId);
  if (!v) throw new DomainError('NOT_FOUND', 'Instruction set not found.');
  return v;
}

/**
 * The set, if the user is a member of its workspace, with the user as its actor; a missing set,
 * a malformed id and a set of another workspace are all NOT_FOUND alike.
 */
export async function setForMember(ctx: ReadDeps, setId: string, userId: string): Promise<{ set: InstructionSetView; actor: SetActor }> {
  if (!isUuid(setId)) throw new DomainError('NOT_FOUND', 'Instruction set not found.');
  const set = await getInstructionSetOrThrow(ctx, setId.toLowerCase());
  const role = await memberRole(ctx, set.workspaceId, userId);
  if (!role) throw new DomainError('NOT_FOUND', 'Instruction set not found.');
  return { set, actor: { userId, role } };
}

export async function listInstructionSets(ctx: AppContext, workspaceId: string) {
  const sets = await instructionSetsCollection(ctx.readStore).find({ workspaceId }, { sort: [{ field: 'createdAt', direction: 'asc' }, { field: 'id', direction: 'asc' }] });
  return sets.map((v) => setSummary(ctx, v));
}

/** A live document by id (a deleted one has left the read model), or null. */
export async function findDocument(ctx: ReadDeps, documentId: string): Promise<DocumentView | null> {
  return documentsCollection(ctx.readStore).get(documentId);
}

/** UTF-8 bytes of a document's extracted text: from the read model, else measured from the text. */
export async function documentSizeBytes(ctx: ReadDeps, d: DocumentView): Promise<number> {
  if (typeof d.sizeBytes === 'number') return d.sizeBytes;
  const t = await documentTextsCollection(ctx.readStore).get(d.id);
  return t ? Buffer.byteLength(t.text, 'utf8') : 0;
}

export type ContentFormat = 'markdown' | 'text';

function formatOf(d: DocumentView | undefined): ContentFormat {
  if (!d) return 'text';
  if (d.kind === 'md' || d.mimeType === 'text/markdown' || d.mimeType === 'text/x-markdown') return 'markdown';
  return /\.(md|markdown)$/i.test(d.filename ?? '') ? 'markdown' : 'text';
}

/** A public set with its documents' texts in set order; null when missing or private. */
export async function publicSetContent(ctx: AppContext, setId: string) {
  const v = await findInstructionSet(ctx, setId);
  if (!v || !v.isPublic) return null;
  // A set left behind by a deleted workspace (a creation racing the deletion) is not served.
  if (!(await workspacesCollection(ctx.readStore).get(v.workspaceId))) return null;
  const { available } = await entryAvailability(ctx, v);
  const docById = new Map(available.map((d) => [d.id, d]));
  const texts = await documentTextsCollection(ctx.readStore).getMany(available.map((d) => d.id));
  const textById = new Map(texts.map((t) => [t.id, t.text]));
  const parts = v.documents
    .filter((d) => docById.has(d.documentId) && textById.has(d.documentId))
    .map((d) => ({ documentId: d.documentId, title: d.title, purpose: d.purpose, sizeBytes: d.sizeBytes, text: textById.get(d.documentId) ?? '', format: formatOf(docById.get(d.documentId)) }));
  return { set: v, parts };
}

/** The raw view: documents' texts in set order, separated by a line of three hyphens. */
export const joinRaw = (texts: string[]): string => texts.join('\n---\n');

/** Why a document may not grow to a size: the first set it would push past the byte limit. */
export interface SetSizeBreach {
  /** Bytes of the set's other documents (what the document's new text comes on top of). */
  currentSize: number;
  /** An upper bound of the new extracted text's UTF-8 bytes. */
  documentSize: number;
  maxSize: number;
  instructionSetId: string;
}

/** Lines that may open a Markdown section (ATX heading, setext underline); over-counts, never under. */
/**
 * The first set holding `documentId` that the document's new `content` would push past
 * MAX_SET_BYTES, or null. A change that does not grow the document's entry is never a breach
 * (it cannot make a set worse, and it is how a set that ended over the limit gets back under).
 */
export async function setSizeBreach(ctx: AppContext, documentId: string, content: string): Promise<SetSizeBreach | null> {
  const holders = await instructionSetsCollection(ctx.readStore).find({ documentIds: { $contains: documentId } }, { sort: [{ field: 'id', direction: 'asc' }] });
  if (holders.length === 0) return null;
  const sizeBytes = extractedSizeBound(content, (await findDocument(ctx, documentId))?.kind);
  for (const v of holders) {
    const entry = v.documents.find((d) => d.documentId === documentId);
    if (!entry || sizeBytes <= entry.sizeBytes) continue;
    const pending = await pendingSizes(ctx, v.documents.map((d) => d.documentId));
    // Other documents count at their size after any auto-save still being processed.
    const others = v.documents.reduce((n, d) => (d.documentId === documentId ? n : n + Math.max(d.sizeBytes, pending.get(d.documentId) ?? 0)), 0);
    if (others + sizeBytes > MAX_SET_BYTES) return { currentSize: others, documentSize: sizeBytes, maxSize: MAX_SET_BYTES, instructionSetId: v.id };
  }
  return null;
}

/** Pending (accepted, not yet processed) auto-save sizes of these documents. */
async function pendingSizes(ctx: ReadDeps, documentIds: string[]): Promise<Map<string, number>> {
  const rows = await documentsCollection(ctx.readStore).getMany(documentIds);
  return new Map(rows.filter((d) => typeof d.pendingSizeBytes === 'number').map((d) => [d.id, d.pendingSizeBytes as number]));
}

/**
 * Bytes by which documents of a set will grow once their accepted auto-saves are processed:
 * a set's limit counts them already, so that an add or another auto-save cannot slip a set
 * past 100 KB while one is in flight.
 */
export async function pendingGrowth(ctx: ReadDeps, entries: { documentId: string; sizeBytes: number }[]): Promise<number> {
  const pending = await pendingSizes(ctx, entries.map((e) => e.documentId));
  return entries.reduce((n, e) => n + Math.max(0, (pending.get(e.documentId) ?? e.sizeBytes) - e.sizeBytes), 0);
}
