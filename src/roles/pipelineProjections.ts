import { checkpointedConsumer, readStoreCheckpoint } from '../core/consumer';
import { Projection } from '../core/projection';
import { RecordedEvent } from '../domain/event';
import { EventFeed } from '../ports/eventFeed';
import { JobQueue } from '../ports/jobQueue';
import { processDocumentJob } from '../processing/processDocumentJob';

export { PROCESS_DOCUMENT_JOB, processDocumentJob } from '../processing/processDocumentJob';
import { ReadStore } from '../ports/readStore';

export const FEED_PUBLISHER = 'event-feed-publisher';
export const PROCESSING_DISPATCHER = 'processing-dispatcher';

/**
 * A projection whose effect is outside the read store (a message broker): `effect` runs for
 * the batch's new events (above the checkpoint), then the checkpoint moves. A crash between
 * the two repeats the effect on restart, so delivery is at least once; consumers
 * de-duplicate (event id for the feed, job id for the queue). Not part of the rebuildable
 * read models: a reset only rewinds the checkpoint.
 */
function sideEffectProjection(name: string, store: ReadStore, effect: (events: RecordedEvent[]) => Promise<void>): Projection {
  return { ...checkpointedConsumer({ name, checkpoint: readStoreCheckpoint(store, name), handle: effect }), reset: () => store.setCheckpoint(name, 0) };
}

/**
 * Publishes every batch of the log to the event feed (Kafka `kb.events`), with its own
 * checkpoint. Give it the store under the encryption decorator: the feed then carries
 * document text sealed, and destroying a document's key erases it in Kafka's copy too.
 */
export function feedPublisherProjection(store: ReadStore, feed: EventFeed): Projection {
  return sideEffectProjection(FEED_PUBLISHER, store, (events) => feed.publish(events));
}

/**
 * Dispatches document processing through the job queue: one `process-document` job per
 * DocumentProcessingStarted (one per processing run, RESUMED runs included), with its own
 * checkpoint so that a replay enqueues nothing twice.
 */
export function processingDispatcherProjection(store: ReadStore, queue: JobQueue): Projection {
  return sideEffectProjection(PROCESSING_DISPATCHER, store, async (events) => {
    for (const e of events) {
      if (e.type !== 'DocumentProcessingStarted') continue;
      const data = e.data as { documentId?: unknown; processingId?: unknown; workspaceId?: unknown };
      if (typeof data.documentId !== 'string' || typeof data.processingId !== 'string') continue;
      const workspaceId = typeof data.workspaceId === 'string' ? data.workspaceId : e.metadata.workspaceId;
      await queue.enqueue(processDocumentJob(data.documentId, data.processingId, workspaceId));
    }
  });
}
