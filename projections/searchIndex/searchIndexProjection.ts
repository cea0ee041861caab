import { checkpointedConsumer, eachEvent } from '../../src/core/consumer';
import { Projection } from '../../src/core/projection';
import { RecordedEvent } from '../../src/domain/event';
import { ChunkData, decodeVector, DocumentEvent, documentStream, isDocumentEvent, Purpose } from '../../src/domain/document/events';
import { WorkspaceEvent } from '../../src/domain/workspace/events';
import { EventStore } from '../../src/ports/eventStore';
import { ReadStore } from '../../src/ports/readStore';
import { IndexedChunk, SearchIndex } from '../../src/ports/searchIndex';
import { tagsCollection } from '../workspace/workspaceProjection';

/** Which documents the index holds, with their tags (to update them on TagDeleted). */
interface IndexedDocView {
  id: string;
  workspaceId: string;
  tags: string[];
}

const INDEXED_DOCS = 'search_index_docs';

export interface SearchIndexProjectionDeps {
  eventStore: EventStore;
  readStore: ReadStore;
  searchIndex: SearchIndex;
}

/**
 * Keeps the search index in step with the log, with the index's own checkpoint. On
 * DocumentVerified it reads the document's stream at that moment and upserts the chunks and
 * vectors of exactly that run (so new content replaces the old only once it is VERIFIED);
 * vectors are never cached in memory between events. Every operation is idempotent
 * (upsert replaces, delete and field updates are repeatable), so a replay after a crash
 * between an operation and the checkpoint changes nothing.
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
    const vectors = new Map<number, Float32Array>();
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
          if (e.data.processingId === processingId) for (const v of e.data.vectors) vectors.set(v.index, decodeVector(v.vector));
          break;
        default:
          break;
      }
    }
    // Tags deleted meanwhile are dropped (TagDeleted after this point is handled when it comes).
    const existing = new Set((await tagsCollection(readStore).find({ workspaceId })).map((t) => t.tagId));
    const liveTags = tags.filter((t) => existing.has(t));
    const out: IndexedChunk[] = [];
    for (const [index, c] of [...chunks.entries()].sort((a, b) => a[0] - b[0])) {
      out.push({
        workspaceId,
        documentId,
        documentTitle: title,
        purpose,
        tags: liveTags,
        chunkIndex: index,
        content: c.content,
        vector: vectors.get(index) ?? [],
        ...(c.page !== undefined ? { page: c.page } : {}),
        ...(c.section !== undefined ? { section: c.section } : {}),
      });
    }
    await searchIndex.upsertDocument(documentId, out);
    await indexed.put({ id: documentId, workspaceId, tags: liveTags });
  }

  async function handle(r: RecordedEvent): Promise<void> {
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
    ...checkpointedConsumer({
      name: 'search-index',
      checkpoint: { get: () => searchIndex.getCheckpoint(), set: (position) => searchIndex.setCheckpoint(position) },
      handle: eachEvent(handle),
    }),
    reset: async () => {
      await searchIndex.clear();
      await readStore.clear([INDEXED_DOCS]);
      await searchIndex.setCheckpoint(0);
    },
  };
}
