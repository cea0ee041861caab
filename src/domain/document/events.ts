import { DomainEvent } from '../event';
import { EventCatalog } from '../eventTraits';

export type Purpose = 'KNOWLEDGE' | 'INSTRUCTION';
export type DocumentKind = 'pdf' | 'docx' | 'doc' | 'txt' | 'md';
export type ProcessingStatus = 'PENDING' | 'PROCESSING' | 'VERIFIED' | 'FAILED';
/** Why a processing run started: the upload, an auto-save, an explicit reprocess, or a restart after a crash. */
export type ProcessingReason = 'UPLOADED' | 'CONTENT_UPDATED' | 'REPROCESS_REQUESTED' | 'RESUMED';
export type ProcessingFailureCode = 'NO_TEXT' | 'CORRUPT' | 'ENCRYPTED' | 'TIMEOUT' | 'EXTRACTION_LIMIT_EXCEEDED' | 'PROCESSING_ERROR';

/**
 * Every event's data carries documentId and workspaceId. Text lives only in the fields
 * `sections[].text`, `chunks[].content` and `content`: the event store encrypts exactly
 * those per document (keyed by data.documentId), so erasing a document erases its text.
 */
type D<T extends string, Data> = DomainEvent<T, { documentId: string; workspaceId: string } & Data>;

export interface ExtractedSectionData {
  text: string;
  page?: number;
  section?: string;
  /** This piece continues the previous one (a long section cut to keep events small): joined to it without a separator. */
  continued?: boolean;
}

export interface ChunkData {
  index: number;
  content: string;
  tokenCount: number;
  page?: number;
  section?: string;
}

export interface EmbeddedVector {
  index: number;
  /** base64 of the little-endian Float32Array bytes. */
  vector: string;
}

export type DocumentUploaded = D<
  'DocumentUploaded',
  {
    blob: { sha256: string; size: number };
    kind: DocumentKind;
    mimeType: string;
    size: number;
    filename: string;
    title: string;
    purpose: Purpose;
    tags: string[];
    uploadedBy: string;
    uploadedAt: string;
  }
>;
export type DocumentProcessingStarted = D<'DocumentProcessingStarted', { processingId: string; reason: ProcessingReason; startedAt: string }>;
/**
 * The run's text, in one event or (a large document) in `parts` events numbered by `part`
 * from 0 (absent: one event), each under MAX_EVENT_BYTES. Every part carries the run's
 * totals (tokenCount, sizeBytes: UTF-8 bytes of the whole text); the text is the parts'
 * sections in order, joined by joinSections.
 */
export type DocumentTextExtracted = D<
  'DocumentTextExtracted',
  { processingId: string; sections: ExtractedSectionData[]; tokenCount: number; sizeBytes: number; part?: number; parts?: number }
>;
/** Chunks of one run, in one or more events (batches in index order). */
export type DocumentChunked = D<'DocumentChunked', { processingId: string; chunks: ChunkData[] }>;
/** Vectors of a batch of chunks, with the model that made them: the index can be rebuilt without re-embedding. */
export type ChunksEmbedded = D<'ChunksEmbedded', { processingId: string; modelId: string; dimensions: number; vectors: EmbeddedVector[] }>;
/** `modelId`: the model of the run's vectors (absent in events written before models were recorded). */
export type DocumentVerified = D<'DocumentVerified', { processingId: string; chunkCount: number; tokenCount: number; modelId?: string }>;
/**
 * Vectors of another model for a batch of chunks of the VERIFIED run `processingId` (an
 * embedding model change, see src/domain/embeddingModel/events.ts), in chunk order from 0.
 */
export type ChunksReembedded = D<'ChunksReembedded', { processingId: string; modelId: string; dimensions: number; vectors: EmbeddedVector[] }>;
/**
 * Every chunk of the run has `modelId`'s vectors (the run's own ChunksEmbedded, or
 * ChunksReembedded before it): the search index takes them. Recorded once per model change
 * that needs them, so a change back to an earlier model re-embeds nothing.
 */
export type DocumentReembedded = D<'DocumentReembedded', { processingId: string; modelId: string; chunkCount: number }>;
export type DocumentProcessingFailed = D<'DocumentProcessingFailed', { processingId: string; code: ProcessingFailureCode; message: string }>;
export type DocumentMetadataUpdated = D<'DocumentMetadataUpdated', { title?: string; purpose?: Purpose; tags?: string[]; updatedAt: string }>;
/** Auto-save of a text or Markdown document; `size` is the UTF-8 bytes of `content`. */
export type DocumentContentUpdated = D<'DocumentContentUpdated', { content: string; size: number; updatedAt: string }>;
export type DocumentReprocessRequested = D<'DocumentReprocessRequested', { requestedAt: string }>;
export type DocumentDeleted = D<'DocumentDeleted', { deletedAt: string; blobSha256: string }>;

export type DocumentEvent =
  | DocumentUploaded
  | DocumentProcessingStarted
  | DocumentTextExtracted
  | DocumentChunked
  | ChunksEmbedded
  | DocumentVerified
  | ChunksReembedded
  | DocumentReembedded
  | DocumentProcessingFailed
  | DocumentMetadataUpdated
  | DocumentContentUpdated
  | DocumentReprocessRequested
  | DocumentDeleted;

/** Events of one processing run: ignored when their processingId is not the document's current run. */
export const PIPELINE_EVENTS: ReadonlySet<string> = new Set([
  'DocumentTextExtracted',
  'DocumentChunked',
  'ChunksEmbedded',
  'DocumentVerified',
  'DocumentProcessingFailed',
]);

export const DOCUMENT_STREAM_PREFIX = 'document-';
export const documentStream = (documentId: string): string => `${DOCUMENT_STREAM_PREFIX}${documentId}`;

export function isDocumentEvent(e: { type: string }): e is DocumentEvent {
  return DOCUMENT_EVENT_TYPES.has(e.type);
}

const DOCUMENT_EVENT_TYPES: ReadonlySet<string> = new Set([
  'DocumentUploaded',
  'DocumentProcessingStarted',
  ...PIPELINE_EVENTS,
  'ChunksReembedded',
  'DocumentReembedded',
  'DocumentMetadataUpdated',
  'DocumentContentUpdated',
  'DocumentReprocessRequested',
  'DocumentDeleted',
]);

/** Float32Array ↔ base64 (little-endian, as every supported platform stores floats). */
export function encodeVector(v: Float32Array): string {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
}

export function decodeVector(s: string): Float32Array {
  const buf = Buffer.from(s, 'base64');
  const copy = new Uint8Array(buf.length);
  copy.set(buf);
  return new Float32Array(copy.buffer, 0, Math.floor(buf.length / 4));
}

/** Audit and encryption traits of every document event (see EventTraits). */
export const documentEventTraits: EventCatalog<DocumentEvent> = {
  DocumentUploaded: { audit: ['title', 'filename', 'mimeType', 'kind', 'size', 'purpose', 'tags'], encrypted: [] },
  DocumentProcessingStarted: { audit: ['reason'], encrypted: [] },
  DocumentTextExtracted: { audit: ['tokenCount', 'sizeBytes'], encrypted: [['sections', '[]', 'text']] },
  DocumentChunked: { audit: [], encrypted: [['chunks', '[]', 'content']] },
  // Embeddings can be inverted into an approximation of the text: they go with it.
  ChunksEmbedded: { audit: ['dimensions'], encrypted: [['vectors', '[]', 'vector']] },
  DocumentVerified: { audit: ['chunkCount', 'tokenCount'], encrypted: [] },
  ChunksReembedded: { audit: ['modelId', 'dimensions'], encrypted: [['vectors', '[]', 'vector']] },
  DocumentReembedded: { audit: ['modelId', 'chunkCount'], encrypted: [] },
  DocumentProcessingFailed: { audit: ['code'], encrypted: [] },
  DocumentMetadataUpdated: { audit: ['title', 'purpose', 'tags'], encrypted: [] },
  DocumentContentUpdated: { audit: ['size'], encrypted: [['content']] },
  DocumentReprocessRequested: { audit: [], encrypted: [] },
  DocumentDeleted: { audit: [], encrypted: [] },
};
