import { documentDecider } from '../../src/domain/document/decider';
import { DocumentEvent, encodeVector } from '../../src/domain/document/events';
import { embeddingModelDecider } from '../../src/domain/embeddingModel/decider';
import { EmbeddingModelEvent } from '../../src/domain/embeddingModel/events';
import { specFor } from '../support/given';

const now = new Date('2025-01-01T00:00:00.000Z');
const ids = { documentId: 'd1', workspaceId: 'w1' };
const vec = (i: number) => ({ index: i, vector: encodeVector(new Float32Array([i, 1])) });

const doc = specFor(documentDecider);
const model = specFor(embeddingModelDecider);

const base = (processingId = 'p1'): DocumentEvent[] => [
  {
    type: 'DocumentUploaded',
    data: { ...ids, blob: { sha256: 'ab'.repeat(32), size: 10 }, kind: 'txt', mimeType: 'text/plain', size: 10, filename: 'a.txt', title: 'A', purpose: 'KNOWLEDGE', tags: [], uploadedBy: 'u1', uploadedAt: now.toISOString() },
  },
  { type: 'DocumentProcessingStarted', data: { ...ids, processingId, reason: 'UPLOADED', startedAt: now.toISOString() } },
  { type: 'DocumentTextExtracted', data: { ...ids, processingId, sections: [{ text: 'a b c' }], tokenCount: 3, sizeBytes: 5 } },
  {
    type: 'DocumentChunked',
    data: { ...ids, processingId, chunks: [0, 1, 2].map((index) => ({ index, content: `c${index}`, tokenCount: 1 })) },
  },
  { type: 'ChunksEmbedded', data: { ...ids, processingId, modelId: 'A', dimensions: 2, vectors: [vec(0), vec(1), vec(2)] } },
];
const verified: DocumentEvent = { type: 'DocumentVerified', data: { ...ids, processingId: 'p1', chunkCount: 3, tokenCount: 3, modelId: 'A' } };
const reembedded = (indexes: number[], modelId = 'B'): DocumentEvent => ({
  type: 'ChunksReembedded',
  data: { ...ids, processingId: 'p1', modelId, dimensions: 2, vectors: indexes.map(vec) },
});

describe('re-embedding a VERIFIED document (document decider)', () => {
  it('records the new model\'s vectors batch by batch, in chunk order; the last batch records DocumentReembedded with it', () => {
    doc([...base(), verified])
      .when({ type: 'RecordReembedding', processingId: 'p1', modelId: 'B', dimensions: 2, vectors: [vec(0), vec(1)] })
      .then([reembedded([0, 1])]);
    doc([...base(), verified, reembedded([0, 1])])
      .when({ type: 'RecordReembedding', processingId: 'p1', modelId: 'B', dimensions: 2, vectors: [vec(2)] })
      .then([reembedded([2]), { type: 'DocumentReembedded', data: { ...ids, processingId: 'p1', modelId: 'B', chunkCount: 3 } }]);
    // Restated after a crash between the batches and the mark (an older log), or for a later change.
    doc([...base(), verified, reembedded([0, 1]), reembedded([2])])
      .when({ type: 'MarkReembedded', processingId: 'p1', modelId: 'B' })
      .then([{ type: 'DocumentReembedded', data: { ...ids, processingId: 'p1', modelId: 'B', chunkCount: 3 } }]);
  });

  it('a resumed re-embedding cannot record a chunk twice nor skip one', () => {
    doc([...base(), verified, reembedded([0, 1])])
      .when({ type: 'RecordReembedding', processingId: 'p1', modelId: 'B', dimensions: 2, vectors: [vec(1), vec(2)] })
      .thenThrows('INVALID_STATE');
    doc([...base(), verified]).when({ type: 'RecordReembedding', processingId: 'p1', modelId: 'B', dimensions: 2, vectors: [vec(1)] }).thenThrows('INVALID_STATE');
  });

  it('not complete before every chunk has the model\'s vectors', () => {
    doc([...base(), verified, reembedded([0, 1])]).when({ type: 'MarkReembedded', processingId: 'p1', modelId: 'B' }).thenThrows('INVALID_STATE');
  });

  it('another model starts from its own chunk 0; each model\'s progress is kept', () => {
    doc([...base(), verified, reembedded([0, 1])])
      .when({ type: 'RecordReembedding', processingId: 'p1', modelId: 'C', dimensions: 2, vectors: [vec(0)] })
      .then([reembedded([0], 'C')]);
    doc([...base(), verified, reembedded([0, 1]), reembedded([0], 'C')])
      .when({ type: 'RecordReembedding', processingId: 'p1', modelId: 'B', dimensions: 2, vectors: [vec(2)] })
      .then([reembedded([2]), { type: 'DocumentReembedded', data: { ...ids, processingId: 'p1', modelId: 'B', chunkCount: 3 } }]);
  });

  it('dropped for a run that is not VERIFIED and current, for the run\'s own model, and once done', () => {
    const cmd = { type: 'RecordReembedding' as const, processingId: 'p1', modelId: 'B', dimensions: 2, vectors: [vec(0)] };
    doc(base()).when(cmd).then([]); // still PROCESSING
    doc([...base(), verified, { type: 'DocumentProcessingStarted', data: { ...ids, processingId: 'p2', reason: 'REPROCESS_REQUESTED', startedAt: now.toISOString() } }])
      .when(cmd)
      .then([]);
    doc([...base(), verified, { type: 'DocumentDeleted', data: { ...ids, deletedAt: now.toISOString(), blobSha256: 'ab' } }]).when(cmd).then([]);
    doc([...base(), verified]).when({ ...cmd, modelId: 'A' }).then([]);
    const done: DocumentEvent = { type: 'DocumentReembedded', data: { ...ids, processingId: 'p1', modelId: 'B', chunkCount: 3 } };
    doc([...base(), verified, reembedded([0, 1, 2]), done]).when(cmd).then([]);
  });

  it('vectors the run already has (its own model, an earlier change) are restated for the index, not embedded again', () => {
    const restated = (modelId: string): DocumentEvent => ({ type: 'DocumentReembedded', data: { ...ids, processingId: 'p1', modelId, chunkCount: 3 } });
    doc([...base(), verified]).when({ type: 'MarkReembedded', processingId: 'p1', modelId: 'A' }).then([restated('A')]);
    doc([...base(), verified, reembedded([0, 1, 2]), restated('B')]).when({ type: 'MarkReembedded', processingId: 'p1', modelId: 'B' }).then([restated('B')]);
    // Restating the run's own model leaves what it knows of another model's vectors alone.
    expect(doc([...base(), verified, restated('A')]).state.run.reembedded).toBeUndefined();
  });

  it('one model per processing run: a batch of another model is refused', () => {
    doc(base().slice(0, 4).concat([{ type: 'ChunksEmbedded', data: { ...ids, processingId: 'p1', modelId: 'A', dimensions: 2, vectors: [vec(0)] } }]))
      .when({ type: 'RecordEmbeddings', processingId: 'p1', modelId: 'B', dimensions: 2, vectors: [vec(1)] })
      .thenThrows('INVALID_STATE');
  });
});

describe('embedding model decider', () => {
  const A = { modelId: 'A', dimensions: 2 };
  const B = { modelId: 'B', dimensions: 3 };
  const C = { modelId: 'C', dimensions: 4 };
  const at = now.toISOString();
  const startedAB: EmbeddingModelEvent = {
    type: 'EmbeddingModelChangeStarted',
    data: { changeId: 'c1', fromModelId: 'A', fromDimensions: 2, toModelId: 'B', dimensions: 3, startedAt: at },
  };

  it('starts a change from the index\'s model to the configured one, once', () => {
    model([]).when({ type: 'StartModelChange', changeId: 'c1', from: A, to: B, now }).then([startedAB]);
    model([startedAB]).when({ type: 'StartModelChange', changeId: 'c2', from: A, to: B, now }).then([]);
    model([]).when({ type: 'StartModelChange', changeId: 'c1', from: A, to: A, now }).then([]);
  });

  it('completes only the change under way, which makes its model the active one', () => {
    const completed: EmbeddingModelEvent = { type: 'EmbeddingModelChangeCompleted', data: { changeId: 'c1', toModelId: 'B', dimensions: 3, documents: 7, completedAt: at } };
    model([startedAB]).when({ type: 'CompleteModelChange', changeId: 'c1', documents: 7, now }).then([completed]);
    model([startedAB]).when({ type: 'CompleteModelChange', changeId: 'other', documents: 7, now }).then([]);
    expect(model([startedAB, completed]).state).toEqual({ active: B });
    // The next change starts from the log's active model, whatever the caller believed.
    model([startedAB, completed])
      .when({ type: 'StartModelChange', changeId: 'c2', from: A, to: C, now })
      .then([{ type: 'EmbeddingModelChangeStarted', data: { changeId: 'c2', fromModelId: 'B', fromDimensions: 3, toModelId: 'C', dimensions: 4, startedAt: at } }]);
  });

  it('configuration back to the active model cancels; a third model supersedes', () => {
    model([startedAB])
      .when({ type: 'StartModelChange', changeId: 'c2', from: A, to: A, now })
      .then([{ type: 'EmbeddingModelChangeCancelled', data: { changeId: 'c1', toModelId: 'B', reason: 'CONFIGURATION_REVERTED', cancelledAt: at } }]);
    model([startedAB])
      .when({ type: 'StartModelChange', changeId: 'c2', from: A, to: C, now })
      .then([
        { type: 'EmbeddingModelChangeCancelled', data: { changeId: 'c1', toModelId: 'B', reason: 'SUPERSEDED', cancelledAt: at } },
        { type: 'EmbeddingModelChangeStarted', data: { changeId: 'c2', fromModelId: 'A', fromDimensions: 2, toModelId: 'C', dimensions: 4, startedAt: at } },
      ]);
    model([]).when({ type: 'CancelModelChange', reason: 'CONFIGURATION_REVERTED', now }).then([]);
  });
});
