import { membersCollection, memberId } from '../../../projections/workspace/workspaceProjection';
import { Request } from 'express';
import * as t from 'io-ts';
import { randomUUID } from 'node:crypto';
import { AppContext } from '../../app/context';
import { DomainError } from '../../domain/errors';
import { DocumentCommand, documentDecider } from '../../domain/document/decider';
import { documentStream, Purpose as PurposeT } from '../../domain/document/events';
import { Role } from '../../domain/workspace/events';
import { workspacesCollection } from '../../../projections/workspace/workspaceProjection';
import { blobUsers, documentDetail, documentForUser, documentIn, listDocuments, unknownTags } from '../../../queries/document/documentQueries';
import { receiveUpload } from '../upload';
import { authOf, requireAuth, requireWorkspaceRole } from '../auth';
import { allowSlowBody } from '../bodyDeadline';
import { byUser, rateLimit } from '../rateLimit';
import { decode, DocumentContent, HumanName, IntFromString, IsoDateString, Purpose, QueryText, strict } from '../codecs';
import { execute } from '../exec';
import { consumeRateLimit } from '../rateLimit';
import { RouteModule, router } from './module';
import { isUuid, Uuid } from '../ids';
import { documentAsOf, parseAsOf } from '../../audit/timeTravel';
import { loadState } from '../../core/commandHandler';
import { setSizeBreach } from '../../../queries/instructionSet/instructionSetQueries';

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const Title = HumanName(255);
const TagIds = t.array(Uuid);
const UpdateBody = strict(t.partial({ title: Title, purpose: Purpose, tags: TagIds }));
const ContentBody = strict(t.intersection([t.type({ content: DocumentContent }), t.partial({ expectedUpdatedAt: IsoDateString })]));

/** The JSON body codecs of these routes (property tests walk them). */
export const documentBodies = { UpdateBody, ContentBody };
const Status = t.keyof({ PENDING: null, PROCESSING: null, VERIFIED: null, FAILED: null });
const ListQuery = t.partial({
  page: t.refinement(IntFromString, (n) => n >= 1, 'page >= 1'),
  limit: t.refinement(IntFromString, (n) => n >= 1 && n <= 100, 'limit 1..100'),
  status: Status,
  purpose: Purpose,
  tags: t.string,
  search: QueryText,
});

function workspaceIdOf(req: Request): string {
  const id = String(req.params.id);
  if (!ID.test(id)) throw new DomainError('WORKSPACE_NOT_FOUND', 'Workspace not found.');
  return id.toLowerCase();
}

/** A path id that cannot name a document is simply not found (never a 500). */
function documentIdOf(req: Request): string {
  const id = String(req.params.docId);
  if (!ID.test(id)) throw new DomainError('DOCUMENT_NOT_FOUND', 'Document not found.');
  return id.toLowerCase();
}

export function documentRoutes(ctx: AppContext): RouteModule {
  const v1 = router();
  v1.use('/workspaces/:id/documents', requireAuth(ctx));
  v1.use('/documents', requireAuth(ctx));

  // Each reprocess re-runs extraction and embedding: bounded per workspace, so no tenant can
  // keep the processors busy by asking again and again (429 RATE_LIMITED, Retry-After).
  const reprocessLimiter = ctx.rateLimiter({ keyPrefix: 'reprocess', points: ctx.config.reprocessPerMinute, durationSeconds: 60 });

  const run = (req: Request, workspaceId: string, documentId: string, command: DocumentCommand) =>
    execute(ctx, req, documentStream(documentId), documentDecider, command, { workspaceId });

  /** Membership (404 WORKSPACE_NOT_FOUND otherwise) and the document in that workspace (404 DOCUMENT_NOT_FOUND). */
  const scoped = async (req: Request): Promise<{ workspaceId: string; documentId: string; role: Role }> => {
    const workspaceId = workspaceIdOf(req);
    const role = await requireWorkspaceRole(ctx, req, workspaceId, 'MEMBER');
    const documentId = documentIdOf(req);
    await documentIn(ctx, workspaceId, documentId);
    return { workspaceId, documentId, role };
  };

  const checkTags = async (workspaceId: string, tags: string[]): Promise<void> => {
    // Ids that are not UUIDs name no tag (and are never looked up).
    const unknown = [...tags.filter((t) => !isUuid(t)), ...(await unknownTags(ctx, workspaceId, tags.filter(isUuid)))];
    if (unknown.length) throw new DomainError('VALIDATION_ERROR', `tags: unknown tag ids in this workspace: ${unknown.join(', ')}`, { unknownTags: unknown });
  };

  // Per user, before the body is read; only then may the body take the upload's longer time.
  const uploadLimit = rateLimit(ctx, 'uploads', ctx.config.uploadRatePerMinute, byUser);
  v1.post('/workspaces/:id/documents', uploadLimit, allowSlowBody(ctx.config.uploadTimeoutMs), async (req, res) => {
    const workspaceId = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, workspaceId, 'MEMBER');
    const upload = await receiveUpload(req, ctx.blobStore, ctx.config.maxUploadBytes, async (sha) => (await blobUsers(ctx, sha)) > 0);
    const documentId = randomUUID();
    let command: DocumentCommand;
    try {
      const title = upload.fields.title?.trim() || upload.filename;
      decode(Title, title);
      let purpose: PurposeT;
      if (upload.fields.purpose !== undefined && upload.fields.purpose.trim() !== '') {
        purpose = decode(Purpose, upload.fields.purpose.trim().toUpperCase());
      } else {
        const w = await workspacesCollection(ctx.readStore).get(workspaceId);
        purpose = w?.settings.defaultDocumentPurpose ?? 'KNOWLEDGE';
      }
      await checkTags(workspaceId, upload.fields.tags);
      command = {
        type: 'UploadDocument',
        documentId,
        workspaceId,
        actorId: authOf(req).userId,
        processingId: randomUUID(),
        blob: upload.blob,
        kind: upload.type.kind,
        mimeType: upload.type.mimeType,
        filename: upload.filename,
        title,
        purpose,
        tags: upload.fields.tags,
        now: ctx.now(),
      };
    } catch (err) {
      if ((await blobUsers(ctx, upload.blob.sha256)) === 0) await ctx.blobStore.delete(upload.blob.sha256).catch(() => undefined);
      throw err;
    }
    const r = await run(req, workspaceId, documentId, command);
    const e = r.events[0];
    if (e.type !== 'DocumentUploaded') throw new Error('unexpected event');
    res.status(201).json({
      id: documentId,
      title: e.data.title,
      filename: e.data.filename,
      mimeType: e.data.mimeType,
      size: e.data.size,
      purpose: e.data.purpose,
      uploadStatus: 'COMPLETED',
      processingStatus: 'PROCESSING',
      tags: e.data.tags,
      createdAt: e.data.uploadedAt,
      updatedAt: e.data.uploadedAt,
    });
  });

  v1.get('/workspaces/:id/documents', async (req, res) => {
    const workspaceId = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, workspaceId, 'MEMBER');
    const q = decode(ListQuery, req.query);
    const tags = q.tags
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    res.json(await listDocuments(ctx, { workspaceId, page: q.page ?? 1, limit: q.limit ?? 20, status: q.status, purpose: q.purpose, tags, search: q.search?.trim() || undefined }));
  });

  v1.get('/workspaces/:id/documents/:docId', async (req, res) => {
    if (req.query.asOf !== undefined) {
      // The document's metadata as it was then, folded from its events (it may be deleted now).
      const asOf = parseAsOf(req.query.asOf);
      if (!asOf) throw new DomainError('VALIDATION_ERROR', 'asOf must be an ISO 8601 time.', { field: 'asOf' });
      const workspaceId = workspaceIdOf(req);
      await requireWorkspaceRole(ctx, req, workspaceId, 'MEMBER');
      const past = await documentAsOf(ctx, documentIdOf(req), asOf);
      if (!past || past.workspaceId !== workspaceId) throw new DomainError('DOCUMENT_NOT_FOUND', 'Document not found at that time.');
      res.json(past);
      return;
    }
    const { workspaceId, documentId } = await scoped(req);
    res.json(await documentDetail(ctx, await documentIn(ctx, workspaceId, documentId)));
  });

  v1.get('/documents/:docId', async (req, res) => {
    if (req.query.asOf !== undefined) {
      const asOf = parseAsOf(req.query.asOf);
      if (!asOf) throw new DomainError('VALIDATION_ERROR', 'asOf must be an ISO 8601 time.', { field: 'asOf' });
      const past = await documentAsOf(ctx, documentIdOf(req), asOf);
      // Membership is checked today, in the workspace the document belonged to.
      if (!past || !(await membersCollection(ctx.readStore).get(memberId(past.workspaceId, authOf(req).userId)))) {
        throw new DomainError('DOCUMENT_NOT_FOUND', 'Document not found at that time.');
      }
      res.json(past);
      return;
    }
    res.json(await documentDetail(ctx, await documentForUser(ctx, authOf(req).userId, documentIdOf(req))));
  });

  v1.put('/workspaces/:id/documents/:docId', async (req, res) => {
    const { workspaceId, documentId, role } = await scoped(req);
    const body = decode(UpdateBody, req.body);
    if (body.tags) await checkTags(workspaceId, body.tags);
    await run(req, workspaceId, documentId, {
      type: 'UpdateDocumentMetadata',
      actorId: authOf(req).userId,
      actorRole: role,
      workspaceId,
      title: body.title?.trim(),
      purpose: body.purpose,
      tags: body.tags,
      now: ctx.now(),
    });
    res.json(await documentDetail(ctx, await documentIn(ctx, workspaceId, documentId)));
  });

  v1.patch('/workspaces/:id/documents/:docId', async (req, res) => {
    const { workspaceId, documentId, role } = await scoped(req);
    const body = decode(ContentBody, req.body);
    const command: DocumentCommand = {
      type: 'UpdateDocumentContent',
      actorId: authOf(req).userId,
      actorRole: role,
      workspaceId,
      content: body.content,
      expectedUpdatedAt: body.expectedUpdatedAt,
      processingId: randomUUID(),
      now: ctx.now(),
    };
    // Instruction sets holding the document must stay within their byte limit, measured on an
    // upper bound of the text the new content will extract to.
    const breach = await setSizeBreach(ctx, documentId, body.content);
    if (breach) {
      // The document's own refusals (not editable, DOCUMENT_LOCKED, ...) come first.
      documentDecider.decide(command, (await loadState(ctx.eventStore, documentStream(documentId), documentDecider)).state);
      throw new DomainError('SIZE_LIMIT_EXCEEDED', `This content would pass the ${breach.maxSize}-byte limit of an instruction set holding the document.`, { ...breach });
    }
    const r = await run(req, workspaceId, documentId, command);
    // The answer describes the document as of this save (processing may already be running).
    const detail = await documentDetail(ctx, await documentIn(ctx, workspaceId, documentId));
    const { error: _error, ...rest } = detail as typeof detail & { error?: unknown };
    res.json({ ...rest, processingStatus: r.state.processingStatus, updatedAt: r.state.updatedAt });
  });

  v1.post('/workspaces/:id/documents/:docId/process', async (req, res) => {
    const { workspaceId, documentId, role } = await scoped(req);
    await consumeRateLimit(ctx, reprocessLimiter, ctx.config.reprocessPerMinute, workspaceId, res);
    await run(req, workspaceId, documentId, { type: 'RequestReprocess', actorId: authOf(req).userId, actorRole: role, workspaceId, processingId: randomUUID(), now: ctx.now() });
    res.json({ id: documentId, processingStatus: 'PROCESSING', message: 'Document queued for reprocessing' });
  });

  v1.delete('/workspaces/:id/documents/:docId', async (req, res) => {
    const { workspaceId, documentId, role } = await scoped(req);
    const r = await run(req, workspaceId, documentId, { type: 'DeleteDocument', actorId: authOf(req).userId, actorRole: role, workspaceId, now: ctx.now() });
    const e = r.events[0];
    // Content-addressed: the file goes once no other document uses it.
    if (e?.type === 'DocumentDeleted' && (await blobUsers(ctx, e.data.blobSha256)) === 0) {
      await ctx.blobStore.delete(e.data.blobSha256).catch((err: unknown) => ctx.logger.warn({ err, documentId }, 'blob delete failed'));
    }
    res.status(204).end();
  });

  return { v1 };
}
