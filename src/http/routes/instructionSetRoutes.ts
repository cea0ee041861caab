import { RouteDocs } from '../openapi/routeDocs';
import { Request } from 'express';
import * as t from 'io-ts';
import { AppContext } from '../../app/context';
import { DomainError } from '../../domain/errors';
import { listInstructionSets, publicUrlOf, setDetailNow, setForMember, setSummary } from '../../../queries/instructionSet/instructionSetQueries';
import { memberRole } from '../../../queries/workspace/workspaceQueries';
import { createInstructionSet } from '../../../commands/instructionSet/createInstructionSet';
import { updateInstructionSet } from '../../../commands/instructionSet/updateInstructionSet';
import { deleteInstructionSet } from '../../../commands/instructionSet/deleteInstructionSet';
import { addSetDocument, removeSetDocument, reorderSetDocuments } from '../../../commands/instructionSet/setDocuments';
import { authOf, enforceIdentityRequirements, requireAuth, requireWorkspaceRole } from '../auth';
import { decode, HumanName, HumanText, IsoDateString, lengthFirstArray, strict } from '../codecs';
import { commandContext } from '../exec';
import { byUser, rateLimit } from '../rateLimit';
import { RouteModule, router } from './module';
import { respond, SetDetail, SetEntryAdded, SetList, SetReordered, SetSummary, SetUpdated } from '../responses';
import { idParam, Uuid } from '../ids';
import { instructionSetAsOf, parseAsOf } from '../../audit/timeTravel';
import { UUID_PATTERN } from '../../domain/ids';
import { asksForThePast, respondWhole, wholeDocumentRead, wholeDocumentTurns } from '../wholeDocumentReads';

const Name = HumanName(200);
const Description = t.union([HumanText(500), t.null]);
const CreateBody = strict(t.intersection([t.type({ name: Name }), t.partial({ description: Description, isPublic: t.boolean })]));
const UpdateBody = strict(t.partial({ name: Name, description: Description, isPublic: t.boolean, expectedUpdatedAt: IsoDateString }));
const AddDocumentBody = strict(t.type({ documentId: t.refinement(t.string, (s) => s.length > 0 && s.length <= 200, 'document id') }));
const ReorderBody = strict(t.type({ documentIds: lengthFirstArray(Uuid, 1000) }));

/** The JSON body codecs of these routes (property tests walk them). */
export const instructionSetBodies = { CreateBody, UpdateBody, AddDocumentBody, ReorderBody };

/** The API description of these routes (schemas from the codecs above). */
export const instructionSetDocs: RouteDocs = {
  'GET /workspaces/:workspaceId/instruction-sets': { summary: 'Instruction sets of a workspace', response: SetList },
  'POST /workspaces/:workspaceId/instruction-sets': { summary: 'Create an instruction set', body: CreateBody, status: 201, response: SetSummary, example: { name: 'Support tone', isPublic: false } },
  'GET /instruction-sets/:id': {
    summary: 'One instruction set with its documents',
    description:
      'The set now; with `asOf` (ISO 8601), the set as it was then, folded from its events: its documents, their titles and order then, and in `unavailableDocuments` those whose document was not VERIFIED at that time (status and failure as they were then).',
    response: SetDetail,
  },
  'PATCH /instruction-sets/:id': { summary: 'Change an instruction set', body: UpdateBody, response: SetUpdated },
  'DELETE /instruction-sets/:id': { summary: 'Delete an instruction set', status: 204, produces: 'none' },
  'POST /instruction-sets/:id/documents': { summary: 'Add a document to a set', body: AddDocumentBody, status: 201, response: SetEntryAdded },
  'PATCH /instruction-sets/:id/documents/reorder': { summary: 'Reorder the documents of a set', body: ReorderBody, response: SetReordered },
  'DELETE /instruction-sets/:id/documents/:documentId': { summary: 'Remove a document from a set', status: 204, produces: 'none' },
};

const UUID = UUID_PATTERN;

function workspaceIdOf(req: Request): string {
  const id = String(req.params.workspaceId);
  if (!UUID.test(id)) throw new DomainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
  return id.toLowerCase();
}

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
  const setForCaller = async (req: Request) => {
    const found = await setForMember(ctx, String(req.params.id), authOf(req).userId);
    // By set id, outside /workspaces/:id: the workspace's identity settings are checked here.
    await enforceIdentityRequirements(ctx, req, found.set.workspaceId);
    return found;
  };
  const cc = (req: Request) => commandContext(ctx, req);

  api.get('/workspaces/:workspaceId/instruction-sets', limits.list, async (req, res) => {
    const workspaceId = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, workspaceId, 'MEMBER');
    respond(res, SetList, { data: await listInstructionSets(ctx, workspaceId) });
  });

  api.post('/workspaces/:workspaceId/instruction-sets', limits.write, async (req, res) => {
    const workspaceId = workspaceIdOf(req);
    const role = await requireWorkspaceRole(ctx, req, workspaceId, 'ADMIN');
    const body = decode(CreateBody, req.body ?? {});
    const { id, state: s } = await createInstructionSet(ctx, cc(req), { ...body, workspaceId, actor: { userId: authOf(req).userId, role } });
    respond(
      res,
      SetSummary,
      setSummary(ctx, {
        id,
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
      201,
    );
  });

  api.get('/instruction-sets/:id', limits.read, wholeDocumentRead(wholeDocumentTurns(ctx), asksForThePast), async (req, res) => {
    if (req.query.asOf !== undefined) {
      // The set as it was then, folded from its events (it may be deleted now).
      const asOf = parseAsOf(req.query.asOf);
      if (!asOf) throw new DomainError('VALIDATION_ERROR', 'asOf must be an ISO 8601 time.', { field: 'asOf' });
      const id = String(req.params.id);
      const past = UUID.test(id) ? await instructionSetAsOf(ctx, id.toLowerCase(), asOf) : null;
      const m = past ? await memberRole(ctx, past.workspaceId, authOf(req).userId) : null;
      if (!past || !m) throw new DomainError('NOT_FOUND', 'Instruction set not found at that time.');
      await enforceIdentityRequirements(ctx, req, past.workspaceId);
      respondWhole(res, SetDetail, past.set);
      return;
    }
    const { set } = await setForCaller(req);
    respond(res, SetDetail, await setDetailNow(ctx, set));
  });

  api.patch('/instruction-sets/:id', limits.write, async (req, res) => {
    const { set, actor } = await setForCaller(req);
    const s = await updateInstructionSet(ctx, cc(req), set, actor, decode(UpdateBody, req.body ?? {}));
    respond(res, SetUpdated, { id: set.id, name: s.name, description: s.description, isPublic: s.isPublic, publicUrl: publicUrlOf(ctx, { id: set.id, isPublic: s.isPublic }), updatedAt: s.updatedAt });
  });

  api.delete('/instruction-sets/:id', limits.write, async (req, res) => {
    const { set, actor } = await setForCaller(req);
    await deleteInstructionSet(ctx, cc(req), set, actor);
    res.status(204).end();
  });

  api.post('/instruction-sets/:id/documents', limits.documents, async (req, res) => {
    const { set, actor } = await setForCaller(req);
    const { entry, order } = await addSetDocument(ctx, cc(req), set, actor, decode(AddDocumentBody, req.body ?? {}));
    respond(res, SetEntryAdded, { documentId: entry.documentId, title: entry.title, sizeBytes: entry.sizeBytes, purpose: entry.purpose, order }, 201);
  });

  api.patch('/instruction-sets/:id/documents/reorder', limits.reorder, async (req, res) => {
    const { set, actor } = await setForCaller(req);
    const documentIds = await reorderSetDocuments(ctx, cc(req), set, actor, decode(ReorderBody, req.body ?? {}));
    respond(res, SetReordered, { documents: documentIds.map((documentId, order) => ({ documentId, order })) });
  });

  api.delete('/instruction-sets/:id/documents/:documentId', limits.documents, async (req, res) => {
    const { set, actor } = await setForCaller(req);
    await removeSetDocument(ctx, cc(req), set, actor, idParam(req, 'documentId', 'NOT_FOUND', 'The document is not in this instruction set.'));
    res.status(204).end();
  });

  return { api, docs: instructionSetDocs };
}
