import { domainError } from '../errors';
import { Role } from '../workspace/events';
import {
  ChunkData,
  DocumentEvent,
  DocumentKind,
  EmbeddedVector,
  ExtractedSectionData,
  ProcessingFailureCode,
  ProcessingStatus,
  Purpose,
} from './events';

/** Progress of the current processing run (what the processor may append next). */
export interface RunState {
  processingId: string;
  /** Every part of the run's text is recorded. */
  extracted: boolean;
  /** DocumentTextExtracted parts recorded so far (absent: none). */
  textParts?: number;
  tokenCount: number;
  chunks: number;
  embedded: number;
  /** The model of the run's vectors (ChunksEmbedded): one per run. */
  modelId?: string;
  /** Vectors of other models for the VERIFIED run (model changes), by model: how many chunks have them, and whether all do. */
  reembedded?: ReadonlyMap<string, { embedded: number; done: boolean }>;
}

export interface DocumentState {
  status: 'none' | 'active' | 'deleted';
  documentId: string;
  workspaceId: string;
  uploadedBy: string;
  kind: DocumentKind;
  blobSha256: string;
  title: string;
  purpose: Purpose;
  tags: string[];
  processingStatus: ProcessingStatus;
  run: RunState;
  createdAt: string;
  updatedAt: string;
  /** When the text last changed (upload or auto-save): what DOCUMENT_LOCKED compares against. */
  contentUpdatedAt: string;
  /** Where the text comes from: the uploaded file, or the last auto-saved content. */
  source: 'blob' | 'content';
}

/** The caller, as the HTTP edge resolved them (membership and role come from the workspace). */
interface Actor {
  actorId: string;
  actorRole: Role;
  workspaceId: string;
}

export type DocumentCommand =
  | {
      type: 'UploadDocument';
      documentId: string;
      workspaceId: string;
      actorId: string;
      processingId: string;
      blob: { sha256: string; size: number };
      kind: DocumentKind;
      mimeType: string;
      filename: string;
      title: string;
      purpose: Purpose;
      tags: string[];
      now: Date;
    }
  | ({ type: 'UpdateDocumentMetadata'; title?: string; purpose?: Purpose; tags?: string[]; now: Date } & Actor)
  | ({ type: 'UpdateDocumentContent'; content: string; expectedUpdatedAt?: string; processingId: string; now: Date } & Actor)
  | ({ type: 'RequestReprocess'; processingId: string; now: Date } & Actor)
  | ({ type: 'DeleteDocument'; now: Date } & Actor)
  // Issued by the document processor (system actor) for the run named by processingId.
  | { type: 'ResumeProcessing'; processingId: string; newProcessingId: string; now: Date }
  | { type: 'RecordTextExtracted'; processingId: string; sections: ExtractedSectionData[]; tokenCount: number; sizeBytes: number; part?: number; parts?: number }
  | { type: 'RecordChunks'; processingId: string; chunks: ChunkData[] }
  | { type: 'RecordEmbeddings'; processingId: string; modelId: string; dimensions: number; vectors: EmbeddedVector[] }
  | { type: 'MarkVerified'; processingId: string }
  // Issued by the re-embedder (system actor) for the VERIFIED run named by processingId.
  | { type: 'RecordReembedding'; processingId: string; modelId: string; dimensions: number; vectors: EmbeddedVector[] }
  | { type: 'MarkReembedded'; processingId: string; modelId: string }
  | { type: 'MarkFailed'; processingId: string; code: ProcessingFailureCode; message: string };

const TEXT_KINDS: readonly DocumentKind[] = ['txt', 'md'];

const emptyRun = (processingId: string): RunState => ({ processingId, extracted: false, tokenCount: 0, chunks: 0, embedded: 0 });

function initialState(): DocumentState {
  return {
    status: 'none',
    documentId: '',
    workspaceId: '',
    uploadedBy: '',
    kind: 'txt',
    blobSha256: '',
    title: '',
    purpose: 'KNOWLEDGE',
    tags: [],
    processingStatus: 'PENDING',
    run: emptyRun(''),
    createdAt: '',
    updatedAt: '',
    contentUpdatedAt: '',
    source: 'blob',
  };
}

/** A pipeline event of an older run changes nothing. */
const current = (s: DocumentState, processingId: string): boolean => s.run.processingId === processingId;

function evolve(s: DocumentState, e: DocumentEvent): DocumentState {
  switch (e.type) {
    case 'DocumentUploaded':
      return {
        ...s,
        status: 'active',
        documentId: e.data.documentId,
        workspaceId: e.data.workspaceId,
        uploadedBy: e.data.uploadedBy,
        kind: e.data.kind,
        blobSha256: e.data.blob.sha256,
        title: e.data.title,
        purpose: e.data.purpose,
        tags: e.data.tags,
        processingStatus: 'PENDING',
        createdAt: e.data.uploadedAt,
        updatedAt: e.data.uploadedAt,
        contentUpdatedAt: e.data.uploadedAt,
        source: 'blob',
      };
    case 'DocumentProcessingStarted':
      return { ...s, processingStatus: 'PROCESSING', run: emptyRun(e.data.processingId) };
    case 'DocumentTextExtracted':
      return current(s, e.data.processingId)
        ? { ...s, run: { ...s.run, extracted: (e.data.part ?? 0) + 1 >= (e.data.parts ?? 1), textParts: (s.run.textParts ?? 0) + 1, tokenCount: e.data.tokenCount } }
        : s;
    case 'DocumentChunked':
      return current(s, e.data.processingId) ? { ...s, run: { ...s.run, chunks: s.run.chunks + e.data.chunks.length } } : s;
    case 'ChunksEmbedded':
      return current(s, e.data.processingId) ? { ...s, run: { ...s.run, embedded: s.run.embedded + e.data.vectors.length, modelId: e.data.modelId } } : s;
    case 'ChunksReembedded': {
      if (!current(s, e.data.processingId)) return s;
      const before = s.run.reembedded?.get(e.data.modelId)?.embedded ?? 0;
      return { ...s, run: { ...s.run, reembedded: new Map(s.run.reembedded).set(e.data.modelId, { embedded: before + e.data.vectors.length, done: false }) } };
    }
    case 'DocumentReembedded':
      if (!current(s, e.data.processingId) || e.data.modelId === s.run.modelId) return s;
      return { ...s, run: { ...s.run, reembedded: new Map(s.run.reembedded).set(e.data.modelId, { embedded: e.data.chunkCount, done: true }) } };
    case 'DocumentVerified':
      return current(s, e.data.processingId) ? { ...s, processingStatus: 'VERIFIED' } : s;
    case 'DocumentProcessingFailed':
      return current(s, e.data.processingId) ? { ...s, processingStatus: 'FAILED' } : s;
    case 'DocumentMetadataUpdated':
      return { ...s, title: e.data.title ?? s.title, purpose: e.data.purpose ?? s.purpose, tags: e.data.tags ?? s.tags, updatedAt: e.data.updatedAt };
    case 'DocumentContentUpdated':
      return { ...s, source: 'content', updatedAt: e.data.updatedAt, contentUpdatedAt: e.data.updatedAt };
    case 'DocumentReprocessRequested':
      return { ...s, updatedAt: e.data.requestedAt };
    case 'DocumentDeleted':
      return { ...s, status: 'deleted' };
    default: {
      const _never: never = e;
      return _never;
    }
  }
}

const notFound = () => domainError('DOCUMENT_NOT_FOUND', 'Document not found.');

/** The document exists in the caller's workspace (its existence elsewhere is not revealed). */
function requireDocument(s: DocumentState, c: Actor): void {
  if (s.status !== 'active' || s.workspaceId !== c.workspaceId) throw notFound();
}

const sameTags = (a: string[], b: string[]): boolean => a.length === b.length && a.every((t, i) => t === b[i]);
const dedupe = (tags: string[]): string[] => [...new Set(tags)];

/** Re-embedding applies only to the current run of a document VERIFIED (with chunks); otherwise it is dropped. */
function verifiedRun(s: DocumentState, processingId: string): boolean {
  return s.status === 'active' && s.processingStatus === 'VERIFIED' && s.run.processingId === processingId && s.run.chunks > 0;
}

/** Pipeline commands apply only to the current run of a document still PROCESSING; otherwise they are dropped. */
function liveRun(s: DocumentState, processingId: string): boolean {
  return s.status === 'active' && s.processingStatus === 'PROCESSING' && s.run.processingId === processingId;
}

function decide(c: DocumentCommand, s: DocumentState): DocumentEvent[] {
  const ids = { documentId: s.documentId, workspaceId: s.workspaceId };
  switch (c.type) {
    case 'UploadDocument': {
      if (s.status !== 'none') throw domainError('CONFLICT', 'Document already exists.');
      const at = c.now.toISOString();
      const base = { documentId: c.documentId, workspaceId: c.workspaceId };
      return [
        {
          type: 'DocumentUploaded',
          data: {
            ...base,
            blob: c.blob,
            kind: c.kind,
            mimeType: c.mimeType,
            size: c.blob.size,
            filename: c.filename,
            title: c.title,
            purpose: c.purpose,
            tags: dedupe(c.tags),
            uploadedBy: c.actorId,
            uploadedAt: at,
          },
        },
        { type: 'DocumentProcessingStarted', data: { ...base, processingId: c.processingId, reason: 'UPLOADED', startedAt: at } },
      ];
    }
    case 'UpdateDocumentMetadata': {
      requireDocument(s, c);
      const title = c.title !== undefined && c.title !== s.title ? c.title : undefined;
      const purpose = c.purpose !== undefined && c.purpose !== s.purpose ? c.purpose : undefined;
      const tags = c.tags !== undefined && !sameTags(dedupe(c.tags), s.tags) ? dedupe(c.tags) : undefined;
      if (title === undefined && purpose === undefined && tags === undefined) return [];
      return [
        {
          type: 'DocumentMetadataUpdated',
          data: {
            ...ids,
            ...(title !== undefined ? { title } : {}),
            ...(purpose !== undefined ? { purpose } : {}),
            ...(tags !== undefined ? { tags } : {}),
            updatedAt: c.now.toISOString(),
          },
        },
      ];
    }
    case 'UpdateDocumentContent': {
      requireDocument(s, c);
      if (!TEXT_KINDS.includes(s.kind)) {
        throw domainError('VALIDATION_ERROR', 'Only text (.txt) and Markdown (.md) documents can be edited; upload a new file instead.');
      }
      // Optimistic lock: the editor saw the text as of expectedUpdatedAt; a newer save by anyone wins.
      if (c.expectedUpdatedAt !== undefined && Date.parse(s.contentUpdatedAt) > Date.parse(c.expectedUpdatedAt)) {
        throw domainError('DOCUMENT_LOCKED', 'The document was edited by someone else since you loaded it; reload it and apply your change again.', {
          lastModifiedAt: s.contentUpdatedAt,
        });
      }
      const at = c.now.toISOString();
      return [
        { type: 'DocumentContentUpdated', data: { ...ids, content: c.content, size: Buffer.byteLength(c.content, 'utf8'), updatedAt: at } },
        { type: 'DocumentProcessingStarted', data: { ...ids, processingId: c.processingId, reason: 'CONTENT_UPDATED', startedAt: at } },
      ];
    }
    case 'RequestReprocess': {
      requireDocument(s, c);
      const at = c.now.toISOString();
      return [
        { type: 'DocumentReprocessRequested', data: { ...ids, requestedAt: at } },
        { type: 'DocumentProcessingStarted', data: { ...ids, processingId: c.processingId, reason: 'REPROCESS_REQUESTED', startedAt: at } },
      ];
    }
    case 'DeleteDocument':
      requireDocument(s, c);
      if (c.actorRole === 'MEMBER' && c.actorId !== s.uploadedBy) {
        throw domainError('FORBIDDEN', 'Members can delete only documents they uploaded; ask an ADMIN or OWNER.');
      }
      return [{ type: 'DocumentDeleted', data: { ...ids, deletedAt: c.now.toISOString(), blobSha256: s.blobSha256 } }];
    case 'ResumeProcessing':
      if (!liveRun(s, c.processingId)) return [];
      return [{ type: 'DocumentProcessingStarted', data: { ...ids, processingId: c.newProcessingId, reason: 'RESUMED', startedAt: c.now.toISOString() } }];
    case 'RecordTextExtracted': {
      if (!liveRun(s, c.processingId)) return [];
      if (s.run.extracted) throw domainError('INVALID_STATE', 'Text of this run was already extracted.');
      const part = c.part ?? 0;
      const parts = c.parts ?? 1;
      const recorded = s.run.textParts ?? 0;
      if (!Number.isInteger(parts) || parts < 1 || part !== recorded || part >= parts) {
        throw domainError('INVALID_STATE', `Text part ${part} of ${parts} out of order (${recorded} recorded).`);
      }
      return [
        {
          type: 'DocumentTextExtracted',
          data: { ...ids, processingId: c.processingId, sections: c.sections, tokenCount: c.tokenCount, sizeBytes: c.sizeBytes, ...(parts > 1 ? { part, parts } : {}) },
        },
      ];
    }
    case 'RecordChunks':
      if (!liveRun(s, c.processingId)) return [];
      if (!s.run.extracted) throw domainError('INVALID_STATE', 'Chunks before extracted text.');
      if (c.chunks.some((ch, i) => ch.index !== s.run.chunks + i)) throw domainError('INVALID_STATE', 'Chunks must arrive in index order.');
      return [{ type: 'DocumentChunked', data: { ...ids, processingId: c.processingId, chunks: c.chunks } }];
    case 'RecordEmbeddings':
      if (!liveRun(s, c.processingId)) return [];
      if (c.vectors.some((v) => v.index < 0 || v.index >= s.run.chunks)) throw domainError('INVALID_STATE', 'Vector for an unknown chunk.');
      // One model per run: a run that straddles a model switch keeps the model it started with.
      if (s.run.modelId !== undefined && s.run.modelId !== c.modelId) throw domainError('INVALID_STATE', `This run's vectors are of ${s.run.modelId}, not ${c.modelId}.`);
      return [{ type: 'ChunksEmbedded', data: { ...ids, processingId: c.processingId, modelId: c.modelId, dimensions: c.dimensions, vectors: c.vectors } }];
    case 'MarkVerified':
      if (!liveRun(s, c.processingId)) return [];
      // Never VERIFIED without searchable chunks: no text is a failure.
      if (s.run.chunks === 0) {
        return [{ type: 'DocumentProcessingFailed', data: { ...ids, processingId: c.processingId, code: 'NO_TEXT', message: 'The document contains no extractable text.' } }];
      }
      if (s.run.embedded < s.run.chunks) throw domainError('INVALID_STATE', `Only ${s.run.embedded} of ${s.run.chunks} chunks are embedded.`);
      return [
        {
          type: 'DocumentVerified',
          data: { ...ids, processingId: c.processingId, chunkCount: s.run.chunks, tokenCount: s.run.tokenCount, ...(s.run.modelId !== undefined ? { modelId: s.run.modelId } : {}) },
        },
      ];
    case 'RecordReembedding': {
      if (!verifiedRun(s, c.processingId) || c.modelId === s.run.modelId) return [];
      const r = s.run.reembedded?.get(c.modelId);
      if (r?.done) return [];
      // In chunk order, each batch after the last: a resumed re-embedding never records a chunk twice.
      const from = r?.embedded ?? 0;
      if (c.vectors.length === 0 || c.vectors.some((v, i) => v.index !== from + i) || from + c.vectors.length > s.run.chunks) {
        throw domainError('INVALID_STATE', `Re-embedded vectors must continue at chunk ${from} of ${s.run.chunks}.`);
      }
      const batch: DocumentEvent = { type: 'ChunksReembedded', data: { ...ids, processingId: c.processingId, modelId: c.modelId, dimensions: c.dimensions, vectors: c.vectors } };
      // The batch that completes the run records the completion with it (one append).
      if (from + c.vectors.length < s.run.chunks) return [batch];
      return [batch, { type: 'DocumentReembedded', data: { ...ids, processingId: c.processingId, modelId: c.modelId, chunkCount: s.run.chunks } }];
    }
    case 'MarkReembedded': {
      if (!verifiedRun(s, c.processingId)) return [];
      // Also for vectors the run already has (its own model's, or an earlier change's): the
      // index of a change under way takes them from the log when this event comes.
      const r = s.run.reembedded?.get(c.modelId);
      const have = c.modelId === s.run.modelId ? s.run.chunks : (r?.embedded ?? 0);
      if (have < s.run.chunks) throw domainError('INVALID_STATE', `Only ${have} of ${s.run.chunks} chunks have ${c.modelId}'s vectors.`);
      return [{ type: 'DocumentReembedded', data: { ...ids, processingId: c.processingId, modelId: c.modelId, chunkCount: s.run.chunks } }];
    }
    case 'MarkFailed':
      if (!liveRun(s, c.processingId)) return [];
      return [{ type: 'DocumentProcessingFailed', data: { ...ids, processingId: c.processingId, code: c.code, message: c.message } }];
    default: {
      const _never: never = c;
      return _never;
    }
  }
}

export const documentDecider = { initialState, evolve, decide };
