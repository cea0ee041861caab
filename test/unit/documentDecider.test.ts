import { documentDecider } from '../../src/domain/document/decider';
import { DocumentEvent, decodeVector, encodeVector } from '../../src/domain/document/events';
import { specFor } from '../support/given';

const now = new Date('2025-01-01T00:00:00.000Z');
const later = new Date('2025-01-01T00:01:00.000Z');
const ids = { documentId: 'd1', workspaceId: 'w1' };

/** given(events).when(command) → then(events) or thenFails(code). */
const given = specFor(documentDecider);

const uploaded = (kind: 'txt' | 'pdf' = 'txt'): DocumentEvent => ({
  type: 'DocumentUploaded',
  data: {
    ...ids,
    blob: { sha256: 'ab'.repeat(32), size: 10 },
    kind,
    mimeType: kind === 'txt' ? 'text/plain' : 'application/pdf',
    size: 10,
    filename: `a.${kind}`,
    title: 'A',
    purpose: 'KNOWLEDGE',
    tags: ['t1'],
    uploadedBy: 'u1',
    uploadedAt: now.toISOString(),
  },
});
const started = (processingId = 'p1', reason: 'UPLOADED' | 'REPROCESS_REQUESTED' = 'UPLOADED'): DocumentEvent => ({
  type: 'DocumentProcessingStarted',
  data: { ...ids, processingId, reason, startedAt: now.toISOString() },
});
const extracted = (processingId = 'p1'): DocumentEvent => ({
  type: 'DocumentTextExtracted',
  data: { ...ids, processingId, sections: [{ text: 'hello world' }], tokenCount: 2, sizeBytes: 11 },
});
const chunked = (processingId = 'p1'): DocumentEvent => ({
  type: 'DocumentChunked',
  data: { ...ids, processingId, chunks: [{ index: 0, content: 'hello world', tokenCount: 2 }] },
});
const embedded = (processingId = 'p1'): DocumentEvent => ({
  type: 'ChunksEmbedded',
  data: { ...ids, processingId, modelId: 'm', dimensions: 2, vectors: [{ index: 0, vector: encodeVector(new Float32Array([1, 2])) }] },
});
const member = { actorId: 'u2', actorRole: 'MEMBER' as const, workspaceId: 'w1' };

describe('document decider', () => {
  it('upload: DocumentUploaded then DocumentProcessingStarted, deduplicating tags', () => {
    given([])
      .when({
        type: 'UploadDocument',
        ...ids,
        actorId: 'u1',
        processingId: 'p1',
        blob: { sha256: 'ab'.repeat(32), size: 10 },
        kind: 'txt',
        mimeType: 'text/plain',
        filename: 'a.txt',
        title: 'A',
        purpose: 'KNOWLEDGE',
        tags: ['t1', 't1'],
        now,
      })
      .then([uploaded(), started()]);
  });

  it('the pipeline of the current run ends VERIFIED with its counts', () => {
    given([uploaded(), started(), extracted(), chunked(), embedded()])
      .when({ type: 'MarkVerified', processingId: 'p1' })
      .then([{ type: 'DocumentVerified', data: { ...ids, processingId: 'p1', chunkCount: 1, tokenCount: 2, modelId: 'm' } }]);
  });

  it('never VERIFIED with zero chunks: NO_TEXT failure instead', () => {
    given([uploaded(), started(), extracted()])
      .when({ type: 'MarkVerified', processingId: 'p1' })
      .then([{ type: 'DocumentProcessingFailed', data: { ...ids, processingId: 'p1', code: 'NO_TEXT', message: 'The document contains no extractable text.' } }]);
  });

  it('not VERIFIED before every chunk is embedded', () => {
    given([uploaded(), started(), extracted(), chunked()]).when({ type: 'MarkVerified', processingId: 'p1' }).thenThrows('INVALID_STATE');
  });

  it('events of a superseded run are ignored by evolve, and commands for it decide nothing', () => {
    const g = given([uploaded(), started('p1'), extracted('p1'), started('p2', 'REPROCESS_REQUESTED'), chunked('p1'), embedded('p1')]);
    expect(g.state.run).toEqual({ processingId: 'p2', extracted: false, tokenCount: 0, chunks: 0, embedded: 0 });
    expect(g.state.processingStatus).toBe('PROCESSING');
    g.when({ type: 'MarkVerified', processingId: 'p1' }).then([]);
    g.when({ type: 'MarkFailed', processingId: 'p1', code: 'CORRUPT', message: 'x' }).then([]);
  });

  it('resuming a half-done run starts a fresh one', () => {
    given([uploaded(), started(), extracted()])
      .when({ type: 'ResumeProcessing', processingId: 'p1', newProcessingId: 'p9', now })
      .then([{ type: 'DocumentProcessingStarted', data: { ...ids, processingId: 'p9', reason: 'RESUMED', startedAt: now.toISOString() } }]);
  });

  it('auto-save: text documents only', () => {
    given([uploaded('pdf'), started()]).when({ type: 'UpdateDocumentContent', ...member, content: 'x', processingId: 'p2', now }).thenThrows('VALIDATION_ERROR');
    given([uploaded(), started()])
      .when({ type: 'UpdateDocumentContent', ...member, content: 'héllo', processingId: 'p2', now: later })
      .then([
        { type: 'DocumentContentUpdated', data: { ...ids, content: 'héllo', size: 6, updatedAt: later.toISOString() } },
        { type: 'DocumentProcessingStarted', data: { ...ids, processingId: 'p2', reason: 'CONTENT_UPDATED', startedAt: later.toISOString() } },
      ]);
  });

  it('auto-save based on a stale view of the text: DOCUMENT_LOCKED', () => {
    const saved: DocumentEvent = { type: 'DocumentContentUpdated', data: { ...ids, content: 'new', size: 3, updatedAt: later.toISOString() } };
    given([uploaded(), started(), saved])
      .when({ type: 'UpdateDocumentContent', ...member, content: 'mine', expectedUpdatedAt: now.toISOString(), processingId: 'p3', now: later })
      .thenThrows('DOCUMENT_LOCKED');
    // A metadata change since does not lock the text.
    const renamed: DocumentEvent = { type: 'DocumentMetadataUpdated', data: { ...ids, title: 'B', updatedAt: later.toISOString() } };
    expect(
      given([uploaded(), started(), renamed]).state.contentUpdatedAt,
    ).toBe(now.toISOString());
    given([uploaded(), started(), renamed])
      .when({ type: 'UpdateDocumentContent', ...member, content: 'mine', expectedUpdatedAt: now.toISOString(), processingId: 'p3', now: later })
      .then([
        { type: 'DocumentContentUpdated', data: { ...ids, content: 'mine', size: 4, updatedAt: later.toISOString() } },
        { type: 'DocumentProcessingStarted', data: { ...ids, processingId: 'p3', reason: 'CONTENT_UPDATED', startedAt: later.toISOString() } },
      ]);
  });

  it('delete: a MEMBER only their own uploads; ADMIN any', () => {
    given([uploaded(), started()]).when({ type: 'DeleteDocument', ...member, now }).thenThrows('FORBIDDEN');
    given([uploaded(), started()])
      .when({ type: 'DeleteDocument', ...member, actorId: 'u1', now })
      .then([{ type: 'DocumentDeleted', data: { ...ids, deletedAt: now.toISOString(), blobSha256: 'ab'.repeat(32) } }]);
    given([uploaded(), started()])
      .when({ type: 'DeleteDocument', ...member, actorRole: 'ADMIN', now })
      .then([{ type: 'DocumentDeleted', data: { ...ids, deletedAt: now.toISOString(), blobSha256: 'ab'.repeat(32) } }]);
  });

  it('a deleted document, or one of another workspace, is not found', () => {
    const deleted: DocumentEvent = { type: 'DocumentDeleted', data: { ...ids, deletedAt: now.toISOString(), blobSha256: 'x' } };
    given([uploaded(), started(), deleted]).when({ type: 'RequestReprocess', ...member, processingId: 'p2', now }).thenThrows('DOCUMENT_NOT_FOUND');
    given([uploaded(), started()]).when({ type: 'RequestReprocess', ...member, workspaceId: 'w2', processingId: 'p2', now }).thenThrows('DOCUMENT_NOT_FOUND');
    given([]).when({ type: 'UpdateDocumentMetadata', ...member, title: 'x', now }).thenThrows('DOCUMENT_NOT_FOUND');
    given([uploaded(), started(), deleted]).when({ type: 'MarkVerified', processingId: 'p1' }).then([]);
  });

  it('metadata: only what changed; nothing when nothing changed', () => {
    given([uploaded(), started()]).when({ type: 'UpdateDocumentMetadata', ...member, title: 'A', tags: ['t1'], now }).then([]);
    given([uploaded(), started()])
      .when({ type: 'UpdateDocumentMetadata', ...member, title: 'A', purpose: 'INSTRUCTION', now })
      .then([{ type: 'DocumentMetadataUpdated', data: { ...ids, purpose: 'INSTRUCTION', updatedAt: now.toISOString() } }]);
  });

  it('reprocess starts a new run from any status', () => {
    const verified: DocumentEvent = { type: 'DocumentVerified', data: { ...ids, processingId: 'p1', chunkCount: 1, tokenCount: 2 } };
    given([uploaded(), started(), extracted(), chunked(), embedded(), verified])
      .when({ type: 'RequestReprocess', ...member, processingId: 'p2', now })
      .then([
        { type: 'DocumentReprocessRequested', data: { ...ids, requestedAt: now.toISOString() } },
        { type: 'DocumentProcessingStarted', data: { ...ids, processingId: 'p2', reason: 'REPROCESS_REQUESTED', startedAt: now.toISOString() } },
      ]);
  });

  it('vectors survive the base64 round trip', () => {
    const v = new Float32Array([0.5, -1.25, 3e-8]);
    expect(Array.from(decodeVector(encodeVector(v)))).toEqual(Array.from(v));
  });
});
