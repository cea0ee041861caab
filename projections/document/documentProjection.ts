import { extractedSizeBound } from '../../src/domain/document/size';
import { joinSections } from '../../src/domain/document/eventParts';
import { Projection, readModelProjection } from '../../src/core/projection';
import { shownLine } from '../../src/util/text';
import { ReadStore } from '../../src/ports/readStore';
import { DocumentEvent, DocumentKind, ExtractedSectionData, isDocumentEvent, ProcessingFailureCode, ProcessingStatus, Purpose } from '../../src/domain/document/events';
import { WorkspaceEvent } from '../../src/domain/workspace/events';

export interface DocumentView {
  id: string;
  workspaceId: string;
  title: string;
  filename: string;
  mimeType: string;
  kind: DocumentKind;
  size: number;
  purpose: Purpose;
  uploadStatus: 'COMPLETED';
  processingStatus: ProcessingStatus;
  tags: string[];
  chunkCount: number;
  tokenCount: number;
  /** UTF-8 bytes of the latest extracted text (instruction-set size limits). */
  sizeBytes: number;
  createdAt: string;
  updatedAt: string;
  uploadedBy: string;
  error?: { code: ProcessingFailureCode; message: string };
  /** The current processing run; pipeline events of other runs are ignored. */
  processingId: string;
  /** Content address of the uploaded file (blob clean-up on delete). */
  blobSha256: string;
  /** Log position of the DocumentVerified in effect: readers wait for the search index to reach it. */
  verifiedPosition?: number;
  /** Upper bound of the text of an accepted auto-save not yet processed (instruction-set limits count it). */
  pendingSizeBytes?: number;
}

/** The latest extracted text of a document (instruction sets read it whole). */
export interface DocumentTextView {
  id: string;
  workspaceId: string;
  text: string;
}

export const documentsCollection = (s: ReadStore) =>
  s.collection<DocumentView>('documents', [{ fields: ['workspaceId'] }, { fields: ['blobSha256'] }]);
export const documentTextsCollection = (s: ReadStore) => s.collection<DocumentTextView>('document_texts', [{ fields: ['workspaceId'] }]);

/** The parts of a large text received so far (all but the last), until its last part makes `document_texts`. */
interface DocumentTextPartView {
  /** `<documentId>:<part>` */
  id: string;
  documentId: string;
  workspaceId: string;
  sections: ExtractedSectionData[];
}
const documentTextPartsCollection = (s: ReadStore) => s.collection<DocumentTextPartView>('document_text_parts', [{ fields: ['documentId'] }, { fields: ['workspaceId'] }]);

/**
 * Read models `documents` and `document_texts`. Deleted documents are removed (others count
 * `documents` by workspaceId). Pipeline events of a run that is no longer the document's
 * current one are ignored, so a late event of an abandoned run never overwrites a newer state.
 */
/**
 * Layout version of these read models. 2: deleted tags remembered (`document_deleted_tags`),
 * so a tag set after its deletion is dropped; a store of version 1 is rebuilt at start.
 * 3: file names shown through `shownLine` (see DocumentUploaded below); a store of version 2, whose
 * names are as uploaded, is rebuilt at start.
 */
const DOCUMENTS_READ_MODEL_VERSION = 3;

export function documentProjection(store: ReadStore): Projection {
  const docs = documentsCollection(store);
  const texts = documentTextsCollection(store);
  const textParts = documentTextPartsCollection(store);
  // Tags deleted so far, by `workspaceId:tagId`: a tag set on a document by a command decided
  // before the deletion (so appended after it) must not come back (tag ids are never reused).
  const deletedTags = store.collection<{ id: string }>('document_deleted_tags');
  const liveTags = async (workspaceId: string, tags: string[]): Promise<string[]> => {
    if (tags.length === 0) return tags;
    const gone = new Set((await deletedTags.getMany(tags.map((t) => `${workspaceId}:${t}`))).map((g) => g.id));
    return tags.filter((t) => !gone.has(`${workspaceId}:${t}`));
  };
  return readModelProjection('documents', store, ['documents', 'document_texts', 'document_text_parts', 'document_deleted_tags'], async (event) => {
    if (event.type === 'TagDeleted' || event.type === 'WorkspaceDeleted') {
      const w = event as unknown as WorkspaceEvent;
      if (w.type === 'TagDeleted') {
        await deletedTags.put({ id: `${w.data.workspaceId}:${w.data.tagId}` });
        const affected = await docs.find({ workspaceId: w.data.workspaceId, tags: { $contains: w.data.tagId } });
        for (const d of affected) await docs.put({ ...d, tags: d.tags.filter((t) => t !== w.data.tagId) });
      } else if (w.type === 'WorkspaceDeleted') {
        await docs.deleteMany({ workspaceId: w.data.workspaceId });
        await texts.deleteMany({ workspaceId: w.data.workspaceId });
        await textParts.deleteMany({ workspaceId: w.data.workspaceId });
      }
      return;
    }
    if (!isDocumentEvent(event)) return;
    const e = event as unknown as DocumentEvent;
    const id = e.data.documentId;
    if (e.type === 'DocumentUploaded') {
      await docs.put({
        id,
        workspaceId: e.data.workspaceId,
        title: e.data.title,
        // Uploads refuse names with control or bidi characters now; a name from before the rule is neutralized
        // here, once for every reader of the view (the API, the console through it, downloads, the past read
        // through `asOf`, which folds with this projection): "salary\u202Etxt.exe\u202C.md" read as another file.
        filename: shownLine(e.data.filename),
        mimeType: e.data.mimeType,
        kind: e.data.kind,
        size: e.data.size,
        purpose: e.data.purpose,
        uploadStatus: 'COMPLETED',
        processingStatus: 'PENDING',
        tags: await liveTags(e.data.workspaceId, e.data.tags),
        chunkCount: 0,
        tokenCount: 0,
        sizeBytes: 0,
        createdAt: e.data.uploadedAt,
        updatedAt: e.data.uploadedAt,
        uploadedBy: e.data.uploadedBy,
        processingId: '',
        blobSha256: e.data.blob.sha256,
      });
      return;
    }
    const d = await docs.get(id);
    if (!d) return; // deleted (or its workspace was)
    switch (e.type) {
      case 'DocumentProcessingStarted': {
        const { error: _error, ...rest } = d;
        await docs.put({ ...rest, processingStatus: 'PROCESSING', processingId: e.data.processingId });
        break;
      }
      case 'DocumentTextExtracted':
        if (e.data.processingId !== d.processingId) break;
        // A large text comes in parts (from 0, in order): the parts before the last are kept
        // as they come, and the last one writes the whole text once (rewriting the text so far
        // at each part wrote a 5 MB text's ~26 parts as ~65 MB, in 60-140 ms pieces).
        if (e.data.parts !== undefined && (e.data.part ?? 0) < e.data.parts - 1) {
          if ((e.data.part ?? 0) === 0) await textParts.deleteMany({ documentId: id }); // an earlier run's
          await textParts.put({ id: `${id}:${e.data.part ?? 0}`, documentId: id, workspaceId: d.workspaceId, sections: e.data.sections });
        } else if (e.data.parts !== undefined) {
          const earlier = await textParts.getMany(Array.from({ length: e.data.parts - 1 }, (_, k) => `${id}:${k}`));
          const byId = new Map(earlier.map((p) => [p.id, p.sections]));
          const sections = Array.from({ length: e.data.parts - 1 }, (_, k) => byId.get(`${id}:${k}`) ?? []).flat();
          await texts.put({ id, workspaceId: d.workspaceId, text: joinSections([...sections, ...e.data.sections]) });
          await textParts.deleteMany({ documentId: id });
        } else {
          await texts.put({ id, workspaceId: d.workspaceId, text: joinSections(e.data.sections) });
        }
        await docs.put({ ...d, sizeBytes: e.data.sizeBytes, tokenCount: e.data.tokenCount });
        break;
      case 'DocumentVerified':
        if (e.data.processingId !== d.processingId) break;
        await docs.put({ ...withoutPending(d), processingStatus: 'VERIFIED', chunkCount: e.data.chunkCount, tokenCount: e.data.tokenCount, verifiedPosition: event.position });
        break;
      case 'DocumentProcessingFailed':
        if (e.data.processingId !== d.processingId) break;
        await docs.put({ ...withoutPending(d), processingStatus: 'FAILED', chunkCount: 0, error: { code: e.data.code, message: e.data.message } });
        break;
      case 'DocumentMetadataUpdated':
        await docs.put({ ...d, title: e.data.title ?? d.title, purpose: e.data.purpose ?? d.purpose, tags: e.data.tags ? await liveTags(d.workspaceId, e.data.tags) : d.tags, updatedAt: e.data.updatedAt });
        break;
      case 'DocumentContentUpdated':
        await docs.put({ ...d, size: e.data.size, updatedAt: e.data.updatedAt, pendingSizeBytes: extractedSizeBound(e.data.content, d.kind) });
        break;
      case 'DocumentReprocessRequested':
        await docs.put({ ...d, updatedAt: e.data.requestedAt });
        break;
      case 'DocumentDeleted':
        await docs.delete(id);
        await texts.delete(id);
        await textParts.deleteMany({ documentId: id });
        break;
      case 'DocumentChunked':
      case 'ChunksEmbedded':
      case 'ChunksReembedded':
      case 'DocumentReembedded':
        break;
      default: {
        const _never: never = e;
        void _never;
      }
    }
  }, { version: DOCUMENTS_READ_MODEL_VERSION });
}

function withoutPending(d: DocumentView): DocumentView {
  const { pendingSizeBytes: _pending, ...rest } = d;
  return rest;
}
