import { Request } from 'express';
import * as t from 'io-ts';
import { randomUUID } from 'node:crypto';
import { AppContext } from '../../app/context';
import { DomainError } from '../../domain/errors';
import { DocumentSnapshot, InstructionSetCommand, SetActor } from '../../domain/instructionSet/decider';
import { memberId, membersCollection } from '../../../projections/workspace/workspaceProjection';
import { InstructionSetView } from '../../../projections/instructionSet/instructionSetProjection';
import { runInstructionSetCommand } from '../../../commands/instructionSet/instructionSetCommands';
import {
  documentSizeBytes,
  findDocument,
  getInstructionSetOrThrow,
  listInstructionSets,
  publicUrlOf,
  setDetailNow,
  setSummary,
  pendingGrowth,
} from '../../../queries/instructionSet/instructionSetQueries';
import { authOf, requireAuth, requireWorkspaceRole } from '../auth';
import { decode, HumanName, HumanText, IsoDateString, strict } from '../codecs';
import { commandContext } from '../exec';
import { byUser, rateLimit } from '../rateLimit';
import { RouteModule, router } from './module';
import { idParam, isUuid, Uuid } from '../ids';
import { instructionSetAsOf, parseAsOf } from '../../audit/timeTravel';

const Name = HumanName(200);
const Description = t.union([HumanText(500), t.null]);
const CreateBody = strict(t.intersection([t.type({ name: Name }), t.partial({ description: Description, isPublic: t.boolean })]));
const UpdateBody = strict(t.partial({ name: Name, description: Description, isPublic: t.boolean, expectedUpdatedAt: IsoDateString }));
const AddDocumentBody = strict(t.type({ documentId: t.refinement(t.string, (s) => s.length > 0 && s.length <= 200, 'document id') }));
const ReorderBody = strict(t.type({ documentIds: t.array(Uuid) }));

/** The JSON body codecs of these routes (property tests walk them). */
export const instructionSetBodies = { CreateBody, UpdateBody, AddDocumentBody, ReorderBody };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function workspaceIdOf(req: Request): string {
  const id = String(req.params.workspaceId);
  if (!UUID.test(id)) throw new DomainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
  return id.toLowerCase();
}

const blankToNull = (s: string | null | undefined): string | null | undefined => (s === undefined ? undefined : s === null || s.trim() === '' ? null : s.trim());

export function instructionSetRoutes(ctx: AppContext): RouteModule {
  const api = router();
  api.use('/instruction-sets', requireAuth(ctx));
  api.use('/workspaces/:workspaceId/instruction-sets', requireAuth(ctx));

  // Per-user limits (spec section 8); reading one set shares the list's budget figure but has its own bucket.
  const limits = {
    list: rateLimit(ctx, 'instruction-sets:list', 60, byUser),
    read: rateLimit(ctx, 'instruction-sets:read', 60, byUser),
    write: rateLimit(ctx, 'instruction-sets:write', 30, byUser),
    documents: rateLimit(ctx, 'instruction-sets:documents', 60, byUser),
    reorder: rateLimit(ctx, 'instruction-sets:reorder', 10, byUser),
  };

  /** The set, if the caller is a member of its workspace; non-members get 404 NOT_FOUND like a missing set. */
  async function setForCaller(req: Request): Promise<{ set: InstructionSetView; actor: SetActor }> {
    const id = String(req.params.id);
    if (!UUID.test(id)) throw new DomainError('NOT_FOUND', 'Instruction set not found.');
    const set = await getInstructionSetOrThrow(ctx, id.toLowerCase());
    const userId = authOf(req).userId;
    const m = await membersCollection(ctx.readStore).get(memberId(set.workspaceId, userId));
    if (!m) throw new DomainError('NOT_FOUND', 'Instruction set not found.');
    return { set, actor: { userId, role: m.role } };
  }

  const run = (req: Request, set: Pick<InstructionSetView, 'id' | 'workspaceId'>, command: InstructionSetCommand) =>
    runInstructionSetCommand(ctx, commandContext(ctx, req, set.workspaceId), set.id, set.workspaceId, command);

  api.get('/workspaces/:workspaceId/instruction-sets', limits.list, async (req, res) => {
    const workspaceId = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, workspaceId, 'MEMBER');
    res.json({ data: await listInstructionSets(ctx, workspaceId) });
  });

  api.post('/workspaces/:workspaceId/instruction-sets', limits.write, async (req, res) => {
    const workspaceId = workspaceIdOf(req);
    const role = await requireWorkspaceRole(ctx, req, workspaceId, 'ADMIN');
    const body = decode(CreateBody, req.body ?? {});
    const setId = randomUUID();
    const r = await run(req, { id: setId, workspaceId }, {
      type: 'CreateInstructionSet',
      setId,
      workspaceId,
      actor: { userId: authOf(req).userId, role },
      name: body.name.trim(),
      description: blankToNull(body.description) ?? null,
      isPublic: body.isPublic ?? false,
      now: ctx.now(),
    });
    const s = r.state;
    res.status(201).json(
      setSummary(ctx, {
        id: setId,
        workspaceId,
        name: s.name,
        description: s.description,
        isPublic: s.isPublic,
        documents: [],
        documentIds: [],
        documentCount: 0,
        totalSizeBytes: 0,
        createdAt: s.createdAt,
        updatedAt: s.updatedAt,
      }),
    );
  });

  api.get('/instruction-sets/:id', limits.read, async (req, res) => {
    if (req.query.asOf !== undefined) {
      // The set as it was then, folded from its events (it may be deleted now).
      const asOf = parseAsOf(req.query.asOf);
      if (!asOf) throw new DomainError('VALIDATION_ERROR', 'asOf must be an ISO 8601 time.', { field: 'asOf' });
      const id = String(req.params.id);
      const past = UUID.test(id) ? await instructionSetAsOf(ctx, id.toLowerCase(), asOf) : null;
      const m = past ? await membersCollection(ctx.readStore).get(memberId(past.workspaceId, authOf(req).userId)) : null;
      if (!past || !m) throw new DomainError('NOT_FOUND', 'Instruction set not found at that time.');
      res.json(past.set);
      return;
    }
    const { set } = await setForCaller(req);
    res.json(await setDetailNow(ctx, set));
  });

  api.patch('/instruction-sets/:id', limits.write, async (req, res) => {
    const { set, actor } = await setForCaller(req);
    const body = decode(UpdateBody, req.body ?? {});
    const r = await run(req, set, {
      type: 'UpdateInstructionSet',
      actor,
      name: body.name?.trim(),
      description: blankToNull(body.description),
      isPublic: body.isPublic,
      expectedUpdatedAt: body.expectedUpdatedAt,
      now: ctx.now(),
    });
    const s = r.state;
    res.json({ id: set.id, name: s.name, description: s.description, isPublic: s.isPublic, publicUrl: publicUrlOf(ctx, { id: set.id, isPublic: s.isPublic }), updatedAt: s.updatedAt });
  });

  api.delete('/instruction-sets/:id', limits.write, async (req, res) => {
    const { set, actor } = await setForCaller(req);
    await run(req, set, { type: 'DeleteInstructionSet', actor, now: ctx.now() });
    res.status(204).end();
  });

  api.post('/instruction-sets/:id/documents', limits.documents, async (req, res) => {
    const { set, actor } = await setForCaller(req);
    const body = decode(AddDocumentBody, req.body ?? {});
    // Not a UUID: no document of that name, without a lookup.
    const documentId = isUuid(body.documentId) ? body.documentId.toLowerCase() : body.documentId;
    const doc = isUuid(documentId) ? await findDocument(ctx, documentId) : null;
    const snapshot: DocumentSnapshot | null = doc
      ? { documentId: doc.id, workspaceId: doc.workspaceId, title: doc.title, purpose: doc.purpose, processingStatus: doc.processingStatus, sizeBytes: await documentSizeBytes(ctx, doc) }
      : null;
    const pendingGrowthBytes = await pendingGrowth(ctx, set.documents);
    const r = await run(req, set, { type: 'AddSetDocument', actor, documentId, document: snapshot, now: ctx.now(), pendingGrowthBytes });
    const order = r.state.documents.findIndex((d) => d.documentId === documentId);
    const entry = r.state.documents[order];
    res.status(201).json({ documentId: entry.documentId, title: entry.title, sizeBytes: entry.sizeBytes, purpose: entry.purpose, order });
  });

  api.patch('/instruction-sets/:id/documents/reorder', limits.reorder, async (req, res) => {
    const { set, actor } = await setForCaller(req);
    const body = decode(ReorderBody, req.body ?? {});
    const r = await run(req, set, { type: 'ReorderSetDocuments', actor, documentIds: body.documentIds, now: ctx.now() });
    res.json({ documents: r.state.documents.map((d, order) => ({ documentId: d.documentId, order })) });
  });

  api.delete('/instruction-sets/:id/documents/:documentId', limits.documents, async (req, res) => {
    const { set, actor } = await setForCaller(req);
    await run(req, set, { type: 'RemoveSetDocument', actor, documentId: idParam(req, 'documentId', 'NOT_FOUND', 'The document is not in this instruction set.'), reason: 'removed', now: ctx.now() });
    res.status(204).end();
  });

  return { api };
}
