import { checkpointedConsumer, eachEvent } from '../../src/core/consumer';
import { Projection } from '../../src/core/projection';
import { RecordedEvent } from '../../src/domain/event';
import { ChunkData, decodeVector, DocumentEvent, documentStream, isDocumentEvent, Purpose } from '../../src/domain/document/events';
import { EmbeddingModelEvent, isEmbeddingModelEvent } from '../../src/domain/embeddingModel/events';
import { WorkspaceEvent } from '../../src/domain/workspace/events';
import { EventStore } from '../../src/ports/eventStore';
import { ReadStore } from '../../src/ports/readStore';
import { ChunkVector, IndexedChunk, SearchIndex } from '../../src/ports/searchIndex';
import { tagsCollection } from '../workspace/workspaceProjection';

/** Which documents the index holds, with their tags (to update them on TagDeleted). */
interface IndexedDocView {
  id: string;
  workspaceId: string;
  tags: string[];
}

const INDEXED_DOCS = 'search_index_docs';

/**
 * The events `handle` acts on; it ignores every other (so this list is what it handles, by
 * construction). Small events all: chunks and vectors are read from the document's stream.
 */
const SEARCH_INDEX_EVENT_TYPES: ReadonlySet<string> = new Set<EmbeddingModelEvent['type'] | WorkspaceEvent['type'] | DocumentEvent['type']>([
  'EmbeddingModelChangeStarted',
  'EmbeddingModelChangeCompleted',
  'EmbeddingModelChangeCancelled',
  'TagDeleted',
  'WorkspaceDeleted',
  'DocumentVerified',
  'DocumentReembedded',
  'DocumentProcessingFailed',
  'DocumentMetadataUpdated',
  'DocumentDeleted',
]);

export interface SearchIndexProjectionDeps {
  eventStore: EventStore;
  readStore: ReadStore;
  searchIndex: SearchIndex;
  /**
   * Store the index's checkpoint only with the batches it acts on (and once it is
   * LAZY_CHECKPOINT_EVENTS behind): a batch of other events (most commands: tags, members,
   * sets) then costs the index nothing, not a checkpoint write and a trip to its thread.
   * Only where no other process reads that checkpoint to wait for a write (a split
   * deployment's API and worker processes do): see the container.
   */
  lazyCheckpoint?: boolean;
}

/**
 * Keeps the search index in step with the log, with the index's own checkpoint. On
 * DocumentVerified it reads the document's stream at that moment and upserts the chunks and
 * vectors of exactly that run (so new content replaces the old only once it is VERIFIED);
 * vectors are never cached in memory between events. Every operation is idempotent
 * (upsert replaces, delete and field updates are repeatable), so a replay after a crash
 * between an operation and the checkpoint changes nothing.
 *
 * Embedding models: the index holds the vectors of its active model, and during a model
 * change (EmbeddingModelChangeStarted … Completed) those of the next model beside them
 * (DocumentReembedded, or a run embedded with it). EmbeddingModelChangeCompleted switches
 * the index to the next model's vectors; a replay of the log replays the switch, so a
 * rebuilt index ends on the current model. A run whose vectors are of neither model (one
 * that straddled a switch) is indexed for BM25 until the re-embedder gives it vectors.
 */
export function searchIndexProjection(deps: SearchIndexProjectionDeps): Projection {
  const { eventStore, readStore, searchIndex } = deps;
  const indexed = readStore.collection<IndexedDocView>(INDEXED_DOCS, [{ fields: ['workspaceId'] }]);

  async function upsertVerified(documentId: string, processingId: string, atRevision: number): Promise<void> {
    const stream = await eventStore.readStream(documentStream(documentId));
    // A document deleted later is never (re)indexed: its text may already be erased.
    if (stream.some((e) => e.type === 'DocumentDeleted')) return;
    let workspaceId = '';
    let title = '';
    let purpose: Purpose = 'KNOWLEDGE';
    let tags: string[] = [];
    const chunks = new Map<number, ChunkData>();
    // The run's vectors by model, then by chunk index.
    const vectors = new Map<string, Map<number, Float32Array>>();
    const vectorsOf = (modelId: string): Map<number, Float32Array> => {
      let m = vectors.get(modelId);
      if (!m) vectors.set(modelId, (m = new Map()));
      return m;
    };
    let runModel: string | undefined;
    for (const r of stream) {
      if (r.revision > atRevision) break;
      const e = r as unknown as DocumentEvent;
      switch (e.type) {
        case 'DocumentUploaded':
          ({ workspaceId, title, purpose, tags } = e.data);
          break;
        case 'DocumentMetadataUpdated':
          title = e.data.title ?? title;
          purpose = e.data.purpose ?? purpose;
          tags = e.data.tags ?? tags;
          break;
        case 'DocumentChunked':
          if (e.data.processingId === processingId) for (const c of e.data.chunks) chunks.set(c.index, c);
          break;
        case 'ChunksEmbedded':
        case 'ChunksReembedded':
          if (e.data.processingId !== processingId) break;
          if (e.type === 'ChunksEmbedded') runModel = e.data.modelId;
          for (const v of e.data.vectors) vectorsOf(e.data.modelId).set(v.index, decodeVector(v.vector));
          break;
        default:
          break;
      }
    }
    // Tags deleted meanwhile are dropped (TagDeleted after this point is handled when it comes).
    const existing = new Set((await tagsCollection(readStore).find({ workspaceId })).map((t) => t.tagId));
    const liveTags = tags.filter((t) => existing.has(t));
    const models = await searchIndex.vectorModels();
    // The active model's vectors (on an index without one, the run's own model becomes it).
    const activeModel = models.active?.modelId ?? runModel;
    const active = activeModel !== undefined ? vectors.get(activeModel) : undefined;
    const next = models.next ? vectors.get(models.next.modelId) : undefined;
    const out: IndexedChunk[] = [];
    for (const [index, c] of [...chunks.entries()].sort((a, b) => a[0] - b[0])) {
      const vector = active?.get(index);
      const nextVector = next?.get(index);
      out.push({
        workspaceId,
        documentId,
        documentTitle: title,
        purpose,
        tags: liveTags,
        chunkIndex: index,
        content: c.content,
        vector: vector ?? [],
        ...(vector && activeModel !== undefined ? { model: activeModel } : {}),
        ...(nextVector && models.next ? { next: { model: models.next.modelId, vector: nextVector } } : {}),
        ...(c.page !== undefined ? { page: c.page } : {}),
        ...(c.section !== undefined ? { section: c.section } : {}),
      });
    }
    await searchIndex.upsertDocument(documentId, out);
    await indexed.put({ id: documentId, workspaceId, tags: liveTags });
  }

  /** A document's vectors of a model (DocumentReembedded): the run's ChunksEmbedded or ChunksReembedded of that model up to this point. */
  async function putReembedded(documentId: string, processingId: string, modelId: string, atRevision: number): Promise<void> {
    const stream = await eventStore.readStream(documentStream(documentId));
    if (stream.some((e) => e.type === 'DocumentDeleted')) return;
    const out: ChunkVector[] = [];
    for (const r of stream) {
      if (r.revision > atRevision) break;
      const e = r as unknown as DocumentEvent;
      if ((e.type !== 'ChunksReembedded' && e.type !== 'ChunksEmbedded') || e.data.processingId !== processingId || e.data.modelId !== modelId) continue;
      for (const v of e.data.vectors) out.push({ chunkIndex: v.index, vector: decodeVector(v.vector) });
    }
    await searchIndex.putVectors(documentId, modelId, out);
  }

  async function handleModelEvent(e: EmbeddingModelEvent): Promise<void> {
    switch (e.type) {
      case 'EmbeddingModelChangeStarted':
        await searchIndex.beginVectorModel({ modelId: e.data.toModelId, dimensions: e.data.dimensions });
        break;
      case 'EmbeddingModelChangeCompleted':
        await searchIndex.switchVectorModel({ modelId: e.data.toModelId, dimensions: e.data.dimensions });
        break;
      case 'EmbeddingModelChangeCancelled':
        await searchIndex.dropVectorModel(e.data.toModelId);
        break;
      default: {
        const _never: never = e;
        void _never;
      }
    }
  }

  async function handle(r: RecordedEvent): Promise<void> {
    if (!SEARCH_INDEX_EVENT_TYPES.has(r.type)) return;
    if (isEmbeddingModelEvent(r)) return handleModelEvent(r as unknown as EmbeddingModelEvent);
    if (r.type === 'TagDeleted' || r.type === 'WorkspaceDeleted') {
      const w = r as unknown as WorkspaceEvent;
      if (w.type === 'TagDeleted') {
        for (const d of await indexed.find({ workspaceId: w.data.workspaceId, tags: { $contains: w.data.tagId } })) {
          const tags = d.tags.filter((t) => t !== w.data.tagId);
          await searchIndex.updateDocumentFields(d.id, { tags });
          await indexed.put({ ...d, tags });
        }
      } else if (w.type === 'WorkspaceDeleted') {
        await searchIndex.deleteWorkspace(w.data.workspaceId);
        await indexed.deleteMany({ workspaceId: w.data.workspaceId });
      }
      return;
    }
    if (!isDocumentEvent(r)) return;
    const e = r as unknown as DocumentEvent;
    switch (e.type) {
      case 'DocumentVerified':
        await upsertVerified(e.data.documentId, e.data.processingId, r.revision);
        break;
      case 'DocumentReembedded':
        await putReembedded(e.data.documentId, e.data.processingId, e.data.modelId, r.revision);
        break;
      case 'DocumentProcessingFailed': {
        // The decider emits a failure only for the current run: the document is not searchable now.
        await searchIndex.deleteDocument(e.data.documentId);
        await indexed.delete(e.data.documentId);
        break;
      }
      case 'DocumentMetadataUpdated': {
        const d = await indexed.get(e.data.documentId);
        if (!d) break;
        const tags = e.data.tags;
        await searchIndex.updateDocumentFields(e.data.documentId, {
          ...(e.data.title !== undefined ? { documentTitle: e.data.title } : {}),
          ...(e.data.purpose !== undefined ? { purpose: e.data.purpose } : {}),
          ...(tags !== undefined ? { tags } : {}),
        });
        if (tags !== undefined) await indexed.put({ ...d, tags });
        break;
      }
      case 'DocumentDeleted':
        await searchIndex.deleteDocument(e.data.documentId);
        await indexed.delete(e.data.documentId);
        break;
      default:
        break;
    }
  }

  return {
    eventTypes: SEARCH_INDEX_EVENT_TYPES,
    ...checkpointedConsumer({
      name: 'search-index',
      checkpoint: { get: () => searchIndex.getCheckpoint(), set: (position) => searchIndex.setCheckpoint(position) },
      handle: eachEvent(handle),
      ...(deps.lazyCheckpoint === true ? { eventTypes: SEARCH_INDEX_EVENT_TYPES } : {}),
    }),
    reset: async () => {
      await searchIndex.clear();
      await readStore.clear([INDEXED_DOCS]);
      await searchIndex.setCheckpoint(0);
    },
  };
}
