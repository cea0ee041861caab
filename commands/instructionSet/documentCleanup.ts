import { AppContext } from '../../src/app/context';
import { CommandContext } from '../../src/core/commandHandler';
import { RecordedEvent } from '../../src/domain/event';
import { Subscription } from '../../src/ports/eventStore';
import { instructionSetsCollection } from '../../projections/instructionSet/instructionSetProjection';
import { findDocument } from '../../queries/instructionSet/instructionSetQueries';
import { runInstructionSetCommand } from './instructionSetCommands';

const CHECKPOINT = 'instruction_set_document_cleanup';

function causedBy(e: RecordedEvent): CommandContext {
  return { actorId: e.metadata.actorId, authMethod: 'system', correlationId: e.metadata.correlationId, now: new Date() };
}

/**
 * Process manager: when a document is deleted, append SetDocumentRemoved
 * {reason: 'document_deleted'} to every set holding it, so each set's stream (and so its
 * decider's limits) learns it. A SetDocumentAdded that raced with the deletion (decided on a
 * read model that had not seen it yet) is undone the same way. Commands are idempotent, so
 * redelivery after a crash is harmless; the checkpoint only saves work.
 */
export function instructionSetDocumentCleanup(ctx: AppContext): AppContext['services'][number] {
  let sub: Subscription | null = null;
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

  /** The read models must have seen `position` before we ask them which sets hold a document. */
  const caughtUp = async (position: number) => {
    if (!(await ctx.runner.waitFor(position, 30_000))) throw new Error('read models did not catch up; retrying');
  };

  const handle = async (events: RecordedEvent[]) => {
    for (const e of events) {
      if (e.type === 'DocumentDeleted') {
        const { documentId } = e.data as { documentId: string };
        await caughtUp(e.position);
        // The read model already dropped the document from its sets; the streams decide who still holds it.
        const holders = await sets.find({ workspaceId: (e.data as { workspaceId: string }).workspaceId });
        for (const s of holders) await remove(e, s.id, s.workspaceId, documentId);
      } else if (e.type === 'SetDocumentAdded') {
        const d = e.data as { setId: string; workspaceId: string; documentId: string };
        await caughtUp(e.position);
        if ((await findDocument(ctx, d.documentId)) === null) await remove(e, d.setId, d.workspaceId, d.documentId);
      }
    }
    await ctx.readStore.setCheckpoint(CHECKPOINT, events[events.length - 1].position);
  };

  return {
    name: 'instruction-set-document-cleanup',
    start: async () => {
      const from = await ctx.readStore.getCheckpoint(CHECKPOINT);
      sub = ctx.eventStore.subscribe(from, handle, (err) => ctx.logger.error({ err }, 'instruction-set cleanup failed; retrying'));
    },
    stop: async () => {
      await sub?.stop();
      sub = null;
    },
  };
}
