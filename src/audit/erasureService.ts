import { AppContext } from '../app/context';
import { RecordedEvent } from '../domain/event';
import { checkpointedConsumer, eachEvent, followingService, readStoreCheckpoint } from '../core/consumer';
import { KeyStore } from '../ports/keyStore';
import { documentsCollection } from '../../projections/document/documentProjection';

/** What the erasure service remembers of each document: its workspace, its file, whether it is gone. */
interface ErasureDocView {
  id: string;
  workspaceId: string;
  blobs: string[];
  deleted: boolean;
}
interface PendingBlobView {
  id: string;
}

const CHECKPOINT = 'erasure';
const docsOf = (c: AppContext) => c.readStore.collection<ErasureDocView>('erasure_documents', [{ fields: ['workspaceId'] }]);
const pendingOf = (c: AppContext) => c.readStore.collection<PendingBlobView>('erasure_pending_blobs');

export interface ErasureDependencies {
  /** The data keys sealing document text in the log; null when the event store does not encrypt. */
  keyStore: KeyStore | null;
  /**
   * Run once the search index has caught up after an erasure, e.g. to merge the embedded
   * index's FTS segments so a deleted document's words leave the file. Absent: nothing to do.
   */
  afterErasure?: () => void | Promise<void>;
}

/**
 * Makes deletion real. On DocumentDeleted (or WorkspaceDeleted: all its documents) it
 * destroys the document's data key, so the text sealed in the log can never be read again,
 * and deletes the uploaded file once no live document uses it. The events themselves (who
 * deleted what, when) stay. Not a projection on purpose: a rebuild must not replay file
 * deletions against a half-rebuilt picture of which documents still use a file; its own
 * checkpoint only moves forward with the real log.
 */
/** What the service acts on (the branches of its `handle`). */
const ERASURE_EVENT_TYPES: ReadonlySet<string> = new Set(['DocumentUploaded', 'DocumentDeleted', 'WorkspaceDeleted']);

export function erasureService(ctx: AppContext, { keyStore: keys, afterErasure }: ErasureDependencies): AppContext['services'][number] {
  let erasedSinceSweep = false;
  /** Files may wait to be deleted: at start (from before it), after an erasure, while an upload holds one. */
  let sweepDue = true;
  const erase = async (doc: ErasureDocView): Promise<void> => {
    erasedSinceSweep = true;
    sweepDue = true;
    await keys?.destroy(doc.id);
    await docsOf(ctx).put({ ...doc, deleted: true });
    for (const b of doc.blobs) await pendingOf(ctx).put({ id: b });
  };

  const handle = async (e: RecordedEvent): Promise<void> => {
    const d = (e.data ?? {}) as Record<string, unknown>;
    const documentId = typeof d.documentId === 'string' ? d.documentId : null;
    const workspaceId = typeof d.workspaceId === 'string' ? d.workspaceId : (e.metadata.workspaceId ?? '');
    if (e.type === 'DocumentUploaded' && documentId) {
      const blob = d.blob as { sha256?: unknown } | undefined;
      const sha = typeof blob?.sha256 === 'string' ? blob.sha256 : null;
      const prev = await docsOf(ctx).get(documentId);
      const blobs = [...new Set([...(prev?.blobs ?? []), ...(sha ? [sha] : [])])];
      await docsOf(ctx).put({ id: documentId, workspaceId, blobs, deleted: prev?.deleted ?? false });
      // A new upload of this content keeps the file.
      if (sha) await pendingOf(ctx).delete(sha);
    } else if (e.type === 'DocumentDeleted' && documentId) {
      const prev = await docsOf(ctx).get(documentId);
      const sha = typeof d.blobSha256 === 'string' ? d.blobSha256 : null;
      const blobs = [...new Set([...(prev?.blobs ?? []), ...(sha ? [sha] : [])])];
      await erase({ id: documentId, workspaceId, blobs, deleted: false });
    } else if (e.type === 'WorkspaceDeleted' && workspaceId) {
      for (const doc of await docsOf(ctx).find({ workspaceId, deleted: false })) await erase(doc);
    }
  };

  /** Delete pending files that no live document uses; only once caught up with the whole log. */
  const unused = async (sha: string): Promise<boolean> => {
    const mine = await docsOf(ctx).find({ blobs: { $contains: sha }, deleted: false }, { limit: 1 });
    const theirs = (await documentsCollection(ctx.readStore).find({ blobSha256: sha })).map((x) => x.id);
    const stillLive = theirs.length > 0 && (await docsOf(ctx).getMany(theirs)).filter((x) => x.deleted).length < theirs.length;
    return mine.length === 0 && !stillLive;
  };
  /** Answers whether files are still pending (held by an upload under way). */
  const sweepBlobs = async (): Promise<boolean> => {
    let held = false;
    for (const p of await pendingOf(ctx).find({})) {
      if (await unused(p.id)) {
        const gone = await ctx.blobStore.delete(p.id, { stillUnused: () => unused(p.id) }).catch(() => true);
        // Held by an upload under way (BlobStore.put): deleted when it lets go if still unused
        // then, and kept pending meanwhile, so a crash before that leaves it to the next sweep.
        if (!gone) {
          held = true;
          continue;
        }
      }
      await pendingOf(ctx).delete(p.id);
    }
    return held;
  };

  const consumer = checkpointedConsumer({
    name: CHECKPOINT,
    checkpoint: readStoreCheckpoint(ctx.readStore, CHECKPOINT),
    handle: eachEvent(handle),
    transaction: (fn) => ctx.readStore.transaction(fn),
    eventTypes: ERASURE_EVENT_TYPES,
  });
  return followingService(ctx.eventStore, consumer, {
    onStart: () => {
      if (!keys) ctx.logger.warn('event store does not encrypt document text: erasure deletes files only');
      // Its views made now, not at the first document: a table made later changes the read
      // store's schema, and every statement prepared before is compiled again on its next use.
      docsOf(ctx);
      pendingOf(ctx);
    },
    afterBatch: async (position) => {
      // Most batches erase nothing: no look at the head, no transaction.
      if (!sweepDue) return;
      if (position < (await ctx.eventStore.headPosition())) return;
      sweepDue = await ctx.readStore.transaction(sweepBlobs);
      if (erasedSinceSweep && afterErasure) {
        erasedSinceSweep = false;
        await ctx.runner.waitFor(position, 10_000);
        try {
          await afterErasure();
        } catch (err) {
          ctx.logger.warn({ err }, 'search index merge after erasure failed');
        }
      }
    },
    onError: (err) => ctx.logger.error({ err }, 'erasure service failed; retrying'),
  });
}
