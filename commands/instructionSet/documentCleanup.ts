import { AppContext } from '../../src/app/context';
import { CommandContext } from '../../src/core/commandHandler';
import { RecordedEvent } from '../../src/domain/event';
import { documentStream } from '../../src/domain/document/events';
import { checkpointedConsumer, eachEvent, followingService, readStoreCheckpoint } from '../../src/core/consumer';
import { instructionSetsCollection } from '../../projections/instructionSet/instructionSetProjection';
import { findDocument } from '../../queries/instructionSet/instructionSetQueries';
import { runInstructionSetCommand } from './instructionSetCommands';

const CHECKPOINT = 'instruction_set_document_cleanup';
/** Sizes of extracted texts awaiting their run's DocumentVerified (bounded; the document's stream is the fallback). */
const MAX_PENDING_SIZES = 10_000;

function causedBy(e: RecordedEvent): CommandContext {
  return { actorId: e.metadata.actorId, authMethod: 'system', correlationId: e.metadata.correlationId, now: new Date() };
}

/**
 * Process manager: when a document is deleted, append SetDocumentRemoved
 * {reason: 'document_deleted'} to every set holding it, so each set's stream (and so its
 * decider's limits) learns it. A SetDocumentAdded that raced with the deletion (decided on a
 * read model that had not seen it yet) is undone the same way. Commands are idempotent, so
 * redelivery after a crash is harmless; the checkpoint only saves work.
 *
 * It also keeps sizes true: when a document held by sets is VERIFIED again (auto-save,
 * reprocess) with the size of that run's DocumentTextExtracted, it appends
 * SetDocumentResized to each set whose entry differs. A SetDocumentAdded that carried a stale
 * size (decided on a read model from before a re-verification) is corrected the same way.
 */
/** What the clean-up acts on (the branches of its `handle`). */
export const SET_CLEANUP_EVENT_TYPES: ReadonlySet<string> = new Set(['DocumentDeleted', 'SetDocumentAdded', 'DocumentTextExtracted', 'DocumentProcessingFailed', 'DocumentVerified']);

export function instructionSetDocumentCleanup(ctx: AppContext): AppContext['services'][number] {
  const sets = instructionSetsCollection(ctx.readStore);

  const remove = async (e: RecordedEvent, setId: string, workspaceId: string, documentId: string) => {
    await runInstructionSetCommand(
      ctx,
      causedBy(e),
      setId,
      workspaceId,
      { type: 'RemoveSetDocument', actor: { userId: null, role: 'SYSTEM' }, documentId, reason: 'document_deleted', now: ctx.now() },
      { waitForReadModels: false },
    );
  };

  const resize = async (e: RecordedEvent, setId: string, workspaceId: string, documentId: string, sizeBytes: number) => {
    await runInstructionSetCommand(
      ctx,
      causedBy(e),
      setId,
      workspaceId,
      { type: 'ResizeSetDocument', actor: { userId: null, role: 'SYSTEM' }, documentId, sizeBytes },
      { waitForReadModels: false },
    );
  };

  /** processingId → sizeBytes of its DocumentTextExtracted, until its DocumentVerified or DocumentProcessingFailed. */
  const extracted = new Map<string, number>();
  const remember = (processingId: string, sizeBytes: number) => {
    extracted.set(processingId, sizeBytes);
    if (extracted.size > MAX_PENDING_SIZES) extracted.delete(extracted.keys().next().value as string);
  };
  /** The size a run extracted: seen on the log, else read back from the document's stream (after a restart). */
  const sizeOfRun = async (documentId: string, processingId: string): Promise<number | null> => {
    const seen = extracted.get(processingId);
    if (seen !== undefined) return seen;
    const events = await ctx.eventStore.readStream(documentStream(documentId));
    for (let i = events.length - 1; i >= 0; i--) {
      const x = events[i];
      const data = x.data as { processingId?: string; sizeBytes?: unknown };
      if (x.type === 'DocumentTextExtracted' && data.processingId === processingId && typeof data.sizeBytes === 'number') return data.sizeBytes;
    }
    return null;
  };

  /** The read models must have seen `position` before we ask them which sets hold a document. */
  const caughtUp = async (position: number) => {
    if (!(await ctx.runner.waitFor(position, 30_000))) throw new Error('read models did not catch up; retrying');
  };

  const handle = async (e: RecordedEvent) => {
    if (e.type === 'DocumentDeleted') {
      const { documentId } = e.data as { documentId: string };
      await caughtUp(e.position);
      // The read model already dropped the document from its sets; the streams decide who still holds it.
      const holders = await sets.find({ workspaceId: (e.data as { workspaceId: string }).workspaceId });
      for (const s of holders) await remove(e, s.id, s.workspaceId, documentId);
    } else if (e.type === 'SetDocumentAdded') {
      const d = e.data as { setId: string; workspaceId: string; documentId: string; sizeBytes: number };
      await caughtUp(e.position);
      const doc = await findDocument(ctx, d.documentId);
      if (doc === null) await remove(e, d.setId, d.workspaceId, d.documentId);
      // VERIFIED in the read model: its sizeBytes is that of the run in effect.
      else if (doc.processingStatus === 'VERIFIED' && typeof doc.sizeBytes === 'number' && doc.sizeBytes !== d.sizeBytes) {
        await resize(e, d.setId, d.workspaceId, d.documentId, doc.sizeBytes);
      }
    } else if (e.type === 'DocumentTextExtracted') {
      const d = e.data as { processingId: string; sizeBytes: number };
      remember(d.processingId, d.sizeBytes);
    } else if (e.type === 'DocumentProcessingFailed') {
      extracted.delete((e.data as { processingId: string }).processingId);
    } else if (e.type === 'DocumentVerified') {
      const { documentId, processingId } = e.data as { documentId: string; processingId: string };
      await caughtUp(e.position);
      // Sets that added it later check its size on their own SetDocumentAdded (above).
      const holders = await sets.find({ documentIds: { $contains: documentId } });
      if (holders.length > 0) {
        const sizeBytes = await sizeOfRun(documentId, processingId);
        if (sizeBytes !== null) for (const s of holders) await resize(e, s.id, s.workspaceId, documentId, sizeBytes);
      }
      extracted.delete(processingId);
    }
  };

  // Not atomic with its checkpoint on purpose: the commands go to the event store and are idempotent.
  const consumer = checkpointedConsumer({ name: CHECKPOINT, checkpoint: readStoreCheckpoint(ctx.readStore, CHECKPOINT), handle: eachEvent(handle), eventTypes: SET_CLEANUP_EVENT_TYPES });
  return {
    ...followingService(ctx.eventStore, consumer, { onError: (err) => ctx.logger.error({ err }, 'instruction-set cleanup failed; retrying') }),
    name: 'instruction-set-document-cleanup',
  };
}
