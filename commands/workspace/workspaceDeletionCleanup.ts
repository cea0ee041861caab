import { AppContext } from '../../src/app/context';
import { handleCommand, systemContext } from '../../src/core/commandHandler';
import { checkpointedConsumer, eachEvent, followingService, readStoreCheckpoint } from '../../src/core/consumer';
import { RecordedEvent } from '../../src/domain/event';
import { DomainError } from '../../src/domain/errors';
import { documentDecider } from '../../src/domain/document/decider';
import { documentStream } from '../../src/domain/document/events';
import { instructionSetDecider } from '../../src/domain/instructionSet/decider';
import { instructionSetStream } from '../../src/domain/instructionSet/events';

const CHECKPOINT = 'workspace_deletion_cleanup';

interface DeletedWorkspace {
  id: string;
}

/**
 * Process manager: a document uploaded or a set created in a workspace that was deleted
 * while the request was in flight (the request was authorised on a read model that had not
 * seen the deletion yet) lands on its own stream after WorkspaceDeleted. Nothing would
 * ever delete it: no member can reach it any more. This deletes it on the workspace
 * owner's behalf, so erasure removes its file and key like every other document of the
 * workspace. Idempotent: deleting what is already gone is skipped.
 */
/** What the clean-up acts on (the branches of its `handle`). */
export const DELETION_CLEANUP_EVENT_TYPES: ReadonlySet<string> = new Set(['WorkspaceDeleted', 'DocumentUploaded', 'InstructionSetCreated']);

export function workspaceDeletionCleanup(ctx: Pick<AppContext, 'eventStore' | 'readStore' | 'logger'>): AppContext['services'][number] {
  const deleted = ctx.readStore.collection<DeletedWorkspace>('deleted_workspaces');

  const ignoreGone = (err: unknown) => {
    if (!(err instanceof DomainError)) throw err;
  };

  const handle = async (e: RecordedEvent): Promise<void> => {
    const data = (e.data ?? {}) as { workspaceId?: unknown; documentId?: unknown; setId?: unknown };
    if (typeof data.workspaceId !== 'string') return;
    if (e.type === 'WorkspaceDeleted') {
      await deleted.put({ id: data.workspaceId });
      return;
    }
    if (e.type !== 'DocumentUploaded' && e.type !== 'InstructionSetCreated') return;
    if (!(await deleted.get(data.workspaceId))) return;
    const cc = { ...systemContext(new Date(), e.metadata.correlationId), workspaceId: data.workspaceId };
    if (e.type === 'DocumentUploaded' && typeof data.documentId === 'string') {
      ctx.logger.info({ documentId: data.documentId, workspaceId: data.workspaceId }, 'deleting a document uploaded into a deleted workspace');
      await handleCommand(
        ctx.eventStore,
        documentStream(data.documentId),
        documentDecider,
        // With the authority of the workspace's deletion (only its OWNER can delete it).
        { type: 'DeleteDocument', actorId: 'system', actorRole: 'OWNER', workspaceId: data.workspaceId, now: cc.now },
        cc,
      ).catch(ignoreGone);
    } else if (e.type === 'InstructionSetCreated' && typeof data.setId === 'string') {
      ctx.logger.info({ setId: data.setId, workspaceId: data.workspaceId }, 'deleting an instruction set created in a deleted workspace');
      await handleCommand(ctx.eventStore, instructionSetStream(data.setId), instructionSetDecider, { type: 'DeleteInstructionSet', actor: { userId: null, role: 'SYSTEM' }, now: cc.now }, cc).catch(ignoreGone);
    }
  };

  const consumer = checkpointedConsumer({ name: CHECKPOINT, checkpoint: readStoreCheckpoint(ctx.readStore, CHECKPOINT), handle: eachEvent(handle), eventTypes: DELETION_CLEANUP_EVENT_TYPES });
  return followingService(ctx.eventStore, consumer, { onError: (err) => ctx.logger.error({ err }, 'workspace deletion clean-up failed; retrying') });
}
