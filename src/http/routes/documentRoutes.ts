import { RouteDocs } from '../openapi/routeDocs';
import { Request } from 'express';
import * as t from 'io-ts';
import { AppContext } from '../../app/context';
import { DomainError } from '../../domain/errors';
import { Role } from '../../domain/workspace/events';
import { blobInUse, documentDetailForUser, documentDetailIn, documentIn, listDocuments } from '../../../queries/document/documentQueries';
import { documentForUserAsOf, documentInAsOf } from '../../../queries/document/documentAsOf';
import { setSizeBreach } from '../../../queries/instructionSet/instructionSetQueries';
import { DocumentActor } from '../../../commands/document/documentCommand';
import { uploadDocument } from '../../../commands/document/uploadDocument';
import { createTextDocument } from '../../../commands/document/createTextDocument';
import { documentFileForUser } from '../../../queries/document/documentFile';
import { documentContentIn } from '../../../queries/document/documentContent';
import { documentTextIn } from '../../../queries/document/documentText';
import { sendFile } from '../download';
import { updateDocumentMetadata } from '../../../commands/document/updateDocumentMetadata';
import { updateDocumentContent } from '../../../commands/document/updateDocumentContent';
import { requestReprocess } from '../../../commands/document/requestReprocess';
import { deleteDocument } from '../../../commands/document/deleteDocument';
import { authOf, enforceIdentityRequirements, requireAuth, requireWorkspaceRole } from '../auth';
import { allowSlowBody } from '../bodyDeadline';
import { byUser, consumeRateLimit, rateLimit } from '../rateLimit';
import { decode, DocumentContent, IntFromString, IsoDateString, lengthFirstArray, Purpose, QueryText, strict } from '../codecs';
import { commandContext } from '../exec';
import { DocumentTitle, receiveDocumentUpload } from '../upload';
import { RouteModule, router } from './module';
import { ContentAnswer, CreatedDocument, DocumentTextAnswer, DocumentDetail, DocumentPage, respond, Reprocessing } from '../responses';
import { Uuid } from '../ids';
import { parseAsOf } from '../../audit/timeTravel';
import { UUID_PATTERN } from '../../domain/ids';
import { asksForThePast, respondWhole, wholeDocumentRead, wholeDocumentTurns } from '../wholeDocumentReads';

const ID = UUID_PATTERN;
const Title = DocumentTitle;
const TagIds = lengthFirstArray(Uuid, 1000);
const UpdateBody = strict(t.partial({ title: Title, purpose: Purpose, tags: TagIds }));
const ContentBody = strict(t.intersection([t.type({ content: DocumentContent }), t.partial({ expectedUpdatedAt: IsoDateString })]));
const TextFormat = t.keyof({ markdown: null, text: null });
/** A document from text: `POST /workspaces/:id/documents` with a JSON body instead of a multipart upload. */
const TextDocumentBody = strict(t.intersection([t.type({ title: Title, content: DocumentContent, format: TextFormat }), t.partial({ purpose: Purpose, tags: TagIds })]));

/** The JSON body codecs of these routes (property tests walk them). */
export const documentBodies = { UpdateBody, ContentBody, TextDocumentBody };

const Status = t.keyof({ PENDING: null, PROCESSING: null, VERIFIED: null, FAILED: null });
const ListQuery = t.partial({
  page: t.refinement(IntFromString, (n) => n >= 1, 'page >= 1'),
  limit: t.refinement(IntFromString, (n) => n >= 1 && n <= 100, 'limit 1..100'),
  status: Status,
  purpose: Purpose,
  tags: t.string,
  search: t.refinement(QueryText, (q) => [...q].length <= 200, 'at most 200 characters'),
});


/** The API description of these routes (schemas from the codecs above). */
export const documentDocs: RouteDocs = {
  'POST /workspaces/:id/documents': {
    summary: 'Upload a document (multipart) or create one from text (JSON)',
    description: 'multipart/form-data with a `file` (pdf, docx, doc, txt, md), or a JSON body `{title, content, format: markdown|text, purpose?, tags?}`. Either way: the same events, limits (KB_MAX_UPLOAD_BYTES, and the 1 MB JSON body limit) and processing.',
    body: TextDocumentBody,
    multipart: true,
    status: 201,
    response: CreatedDocument,
    example: { title: 'Refund policy', content: '# Refunds\n\nRefunds are paid within five business days.', format: 'markdown', tags: [] },
  },
  'GET /workspaces/:id/documents': { summary: 'List documents (paged, filtered)', query: ListQuery, response: DocumentPage },
  'GET /workspaces/:id/documents/:docId': { summary: 'One document (`asOf` for its metadata in the past)', description: 'The answer described is the current one; with `asOf`, the document\'s metadata folded from its events up to that time.', response: DocumentDetail },
  'GET /documents/:docId': { summary: 'One document, in any workspace you are a member of', description: 'The answer described is the current one; with `asOf`, the document\'s metadata folded from its events up to that time.', response: DocumentDetail },
  'GET /documents/:docId/file': { summary: 'The original file (the upload, or the text it was created from), as an attachment', produces: 'application/octet-stream' },
  'PUT /workspaces/:id/documents/:docId': { summary: "Change a document's title, purpose or tags", body: UpdateBody, response: DocumentDetail, example: { title: 'Refunds', purpose: 'KNOWLEDGE' } },
  'GET /workspaces/:id/documents/:docId/content': {
    summary: 'The current text of a .txt or .md document (for the editor)',
    description:
      'Answers `{content, updatedAt, format: markdown|text}`: the last auto-saved content, or else the uploaded file as UTF-8. Send `updatedAt` back as `expectedUpdatedAt` when saving; after a 409 DOCUMENT_LOCKED, this is where the other person\'s text is read. 400 VALIDATION_ERROR for pdf, docx and doc documents.',
    response: ContentAnswer,
  },
  'GET /workspaces/:id/documents/:docId/text': {
    summary: 'The text search used for a document (`asOf` for a past time)',
    description:
      'The extracted text of the document\'s last run that was VERIFIED (now, or at `asOf`), with that run\'s id, when it was verified, its token count and UTF-8 size; `text` and `processingId` are null when no run had been verified by then. Any kind (pdf, docx, doc, txt, md). 404 DOCUMENT_NOT_FOUND when the document did not exist then or is deleted; 410 DOCUMENT_TEXT_ERASED when the document was deleted since (its text was erased with it; `GET ...?asOf=` still shows its metadata).',
    response: DocumentTextAnswer,
  },
  'PATCH /workspaces/:id/documents/:docId': { summary: 'Save new text content of a .txt or .md document (auto-save)', body: ContentBody, response: DocumentDetail },
  'POST /workspaces/:id/documents/:docId/process': { summary: 'Process a document again (rate limited per workspace)', response: Reprocessing },
  'DELETE /workspaces/:id/documents/:docId': { summary: 'Delete a document (its text is erased)', status: 204, produces: 'none' },
};

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

/** The `asOf` query value, when the request asks for the past. */
function asOfOf(req: Request): Date | undefined {
  if (req.query.asOf === undefined) return undefined;
  const asOf = parseAsOf(req.query.asOf);
  if (!asOf) throw new DomainError('VALIDATION_ERROR', 'asOf must be an ISO 8601 time.', { field: 'asOf' });
  return asOf;
}

export function documentRoutes(ctx: AppContext): RouteModule {
  const v1 = router();
  // A document's text, content or past: a few at once (each holds the whole text until its client has it).
  const turns = wholeDocumentTurns(ctx);
  v1.use('/workspaces/:id/documents', requireAuth(ctx));
  v1.use('/documents', requireAuth(ctx));

  // Each reprocess re-runs extraction and embedding: bounded per workspace, so no tenant can
  // keep the processors busy by asking again and again (429 RATE_LIMITED, Retry-After).
  const reprocessLimiter = ctx.rateLimiter({ keyPrefix: 'reprocess', points: ctx.config.reprocessPerMinute, durationSeconds: 60 });
  const contentPorts = { ...ctx, setSizeBreach: (documentId: string, content: string) => setSizeBreach(ctx, documentId, content) };

  /** The signed-in user asking, in this workspace, now. */
  const actorOf = (req: Request, workspaceId: string): DocumentActor => ({ ...commandContext(ctx, req, workspaceId), actorId: authOf(req).userId, workspaceId });

  /** Membership (404 WORKSPACE_NOT_FOUND otherwise) and the document in that workspace (404 DOCUMENT_NOT_FOUND). */
  const scoped = async (req: Request): Promise<{ actor: DocumentActor; actorRole: Role; documentId: string }> => {
    const workspaceId = workspaceIdOf(req);
    const actorRole = await requireWorkspaceRole(ctx, req, workspaceId, 'MEMBER');
    const documentId = documentIdOf(req);
    await documentIn(ctx, workspaceId, documentId);
    return { actor: actorOf(req, workspaceId), actorRole, documentId };
  };

  // Per user, before the body is read; only then may the body take the upload's longer time.
  const uploadLimit = rateLimit(ctx, 'uploads', ctx.config.uploadRatePerMinute, byUser);
  v1.post('/workspaces/:id/documents', uploadLimit, allowSlowBody(ctx.config.uploadTimeoutMs), async (req, res) => {
    const workspaceId = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, workspaceId, 'MEMBER');
    const actor = actorOf(req, workspaceId);
    let d;
    if (req.is(['application/json', 'application/*+json'])) {
      const body = decode(TextDocumentBody, req.body);
      d = await createTextDocument({ ...ctx, maxUploadBytes: ctx.config.maxUploadBytes }, { actor, text: { ...body, tags: body.tags ?? [] } });
    } else {
      const upload = await receiveDocumentUpload(req, ctx.blobStore, ctx.config.maxUploadBytes, (sha) => blobInUse(ctx, sha));
      d = await uploadDocument(ctx, { actor, upload });
    }
    respond(res, CreatedDocument, {
      id: d.id,
      title: d.title,
      filename: d.filename,
      mimeType: d.mimeType,
      size: d.size,
      purpose: d.purpose,
      uploadStatus: 'COMPLETED',
      processingStatus: 'PROCESSING',
      tags: d.tags,
      createdAt: d.uploadedAt,
      updatedAt: d.uploadedAt,
    }, 201);
  });

  v1.get('/workspaces/:id/documents', async (req, res) => {
    const workspaceId = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, workspaceId, 'MEMBER');
    const q = decode(ListQuery, req.query);
    const tags = q.tags
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    respond(res, DocumentPage, await listDocuments(ctx, { workspaceId, page: q.page ?? 1, limit: q.limit ?? 20, status: q.status, purpose: q.purpose, tags, search: q.search?.trim() || undefined }));
  });

  v1.get('/workspaces/:id/documents/:docId', wholeDocumentRead(turns, asksForThePast), async (req, res) => {
    const asOf = asOfOf(req);
    if (asOf) {
      // The document's metadata as it was then, folded from its events (it may be deleted now).
      const workspaceId = workspaceIdOf(req);
      await requireWorkspaceRole(ctx, req, workspaceId, 'MEMBER');
      respondWhole(res, DocumentDetail, await documentInAsOf(ctx, workspaceId, documentIdOf(req), asOf));
      return;
    }
    const { actor, documentId } = await scoped(req);
    respondWhole(res, DocumentDetail, await documentDetailIn(ctx, actor.workspaceId, documentId));
  });

  // By document id, outside /workspaces/:id: the workspace's identity settings are checked once it is known (members only).
  v1.get('/documents/:docId', wholeDocumentRead(turns, asksForThePast), async (req, res) => {
    const asOf = asOfOf(req);
    // In the past, membership is checked today, in the workspace the document belonged to.
    const doc = asOf ? await documentForUserAsOf(ctx, authOf(req).userId, documentIdOf(req), asOf) : await documentDetailForUser(ctx, authOf(req).userId, documentIdOf(req));
    await enforceIdentityRequirements(ctx, req, doc.workspaceId);
    respondWhole(res, DocumentDetail, doc);
  });

  // The original file (the upload, or the text a document was created from), for members of its workspace.
  v1.get('/documents/:docId/file', async (req, res) => {
    await sendFile(res, await documentFileForUser(ctx, authOf(req).userId, documentIdOf(req), (workspaceId) => enforceIdentityRequirements(ctx, req, workspaceId)), ctx.config.wholeDocumentStallMs, ctx.config.wholeDocumentMinBytesPerS);
  });

  // The editor's text (and the other person's, after DOCUMENT_LOCKED), for members.
  v1.get('/workspaces/:id/documents/:docId/content', wholeDocumentRead(turns), async (req, res) => {
    const { actor, documentId } = await scoped(req);
    respondWhole(res, ContentAnswer, await documentContentIn(ctx, actor.workspaceId, documentId));
  });

  // The text search used (any kind), now or as of a past time; for members.
  v1.get('/workspaces/:id/documents/:docId/text', wholeDocumentRead(turns), async (req, res) => {
    const unknown = Object.keys(req.query).filter((k) => k !== 'asOf');
    if (unknown.length) throw new DomainError('VALIDATION_ERROR', `Unknown parameter ${unknown[0]}; known: asOf.`, { field: unknown[0] });
    const asOf = asOfOf(req);
    const workspaceId = workspaceIdOf(req);
    await requireWorkspaceRole(ctx, req, workspaceId, 'MEMBER');
    respondWhole(res, DocumentTextAnswer, await documentTextIn(ctx, workspaceId, documentIdOf(req), asOf));
  });

  v1.put('/workspaces/:id/documents/:docId', async (req, res) => {
    const { actor, actorRole, documentId } = await scoped(req);
    const body = decode(UpdateBody, req.body);
    await updateDocumentMetadata(ctx, { actor, actorRole, documentId, ...body });
    respond(res, DocumentDetail, await documentDetailIn(ctx, actor.workspaceId, documentId));
  });

  v1.patch('/workspaces/:id/documents/:docId', async (req, res) => {
    const { actor, actorRole, documentId } = await scoped(req);
    const body = decode(ContentBody, req.body);
    const saved = await updateDocumentContent(contentPorts, { actor, actorRole, documentId, ...body });
    // The answer describes the document as of this save (processing may already be running).
    const { error: _error, ...rest } = (await documentDetailIn(ctx, actor.workspaceId, documentId)) as Awaited<ReturnType<typeof documentDetailIn>> & { error?: unknown };
    respond(res, DocumentDetail, { ...rest, processingStatus: saved.processingStatus, updatedAt: saved.updatedAt });
  });

  v1.post('/workspaces/:id/documents/:docId/process', async (req, res) => {
    const { actor, actorRole, documentId } = await scoped(req);
    await consumeRateLimit(ctx, reprocessLimiter, ctx.config.reprocessPerMinute, actor.workspaceId, res, 'reprocess');
    await requestReprocess(ctx, { actor, actorRole, documentId });
    respond(res, Reprocessing, { id: documentId, processingStatus: 'PROCESSING', message: 'Document queued for reprocessing' });
  });

  v1.delete('/workspaces/:id/documents/:docId', async (req, res) => {
    const { actor, actorRole, documentId } = await scoped(req);
    await deleteDocument(ctx, { actor, actorRole, documentId });
    res.status(204).end();
  });

  return { v1, docs: documentDocs };
}
