import { AppContext } from '../../src/app/context';
import { DomainError } from '../../src/domain/errors';
import { instructionSetsCollection, InstructionSetView } from '../../projections/instructionSet/instructionSetProjection';

/** The documents feature's read models, as far as instruction sets read them. */
export interface DocumentRecord {
  id: string;
  workspaceId: string;
  title: string;
  filename?: string;
  mimeType?: string;
  kind?: string;
  purpose: 'KNOWLEDGE' | 'INSTRUCTION';
  processingStatus: string;
  sizeBytes?: number;
  deleted?: boolean;
}
export interface DocumentTextRecord {
  id: string;
  workspaceId: string;
  text: string;
}

const documents = (ctx: AppContext) => ctx.readStore.collection<DocumentRecord>('documents', [{ fields: ['workspaceId'] }]);
const documentTexts = (ctx: AppContext) => ctx.readStore.collection<DocumentTextRecord>('document_texts');

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

export async function findInstructionSet(ctx: AppContext, setId: string): Promise<InstructionSetView | null> {
  return instructionSetsCollection(ctx.readStore).get(setId);
}

export async function getInstructionSetOrThrow(ctx: AppContext, setId: string): Promise<InstructionSetView> {
  const v = await findInstructionSet(ctx, setId);
  if (!v) throw new DomainError('NOT_FOUND', 'Instruction set not found.');
  return v;
}

export async function listInstructionSets(ctx: AppContext, workspaceId: string) {
  const sets = await instructionSetsCollection(ctx.readStore).find({ workspaceId }, { sort: [{ field: 'createdAt', direction: 'asc' }, { field: 'id', direction: 'asc' }] });
  return sets.map((v) => setSummary(ctx, v));
}

/** A live document (not deleted) by id, or null. */
export async function findDocument(ctx: AppContext, documentId: string): Promise<DocumentRecord | null> {
  const d = await documents(ctx).get(documentId);
  return d && d.deleted !== true ? d : null;
}

/** UTF-8 bytes of a document's extracted text: from the read model, else measured from the text. */
export async function documentSizeBytes(ctx: AppContext, d: DocumentRecord): Promise<number> {
  if (typeof d.sizeBytes === 'number') return d.sizeBytes;
  const t = await documentTexts(ctx).get(d.id);
  return t ? Buffer.byteLength(t.text, 'utf8') : 0;
}

export type ContentFormat = 'markdown' | 'text';

function formatOf(d: DocumentRecord | undefined): ContentFormat {
  if (!d) return 'text';
  if (d.kind === 'md' || d.mimeType === 'text/markdown' || d.mimeType === 'text/x-markdown') return 'markdown';
  return /\.(md|markdown)$/i.test(d.filename ?? '') ? 'markdown' : 'text';
}

/** A public set with its documents' texts in set order; null when missing or private. */
export async function publicSetContent(ctx: AppContext, setId: string) {
  const v = await findInstructionSet(ctx, setId);
  if (!v || !v.isPublic) return null;
  const ids = v.documents.map((d) => d.documentId);
  const [texts, docs] = await Promise.all([documentTexts(ctx).getMany(ids), documents(ctx).getMany(ids)]);
  const textById = new Map(texts.map((t) => [t.id, t.text]));
  const docById = new Map(docs.map((d) => [d.id, d]));
  const parts = v.documents
    .filter((d) => textById.has(d.documentId) && docById.get(d.documentId)?.deleted !== true)
    .map((d) => ({ documentId: d.documentId, title: d.title, purpose: d.purpose, text: textById.get(d.documentId) ?? '', format: formatOf(docById.get(d.documentId)) }));
  return { set: v, parts };
}

/** The raw view: documents' texts in set order, separated by a line of three hyphens. */
export const joinRaw = (texts: string[]): string => texts.join('\n---\n');
