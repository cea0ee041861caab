import { Response } from 'express';
import * as t from 'io-ts';
import { IsoDateString, Purpose, Role } from './codecs';
import { Uuid } from './ids';

/**
 * Response body codecs of the main routes: what /openapi.json documents for a success answer
 * (`response` in a route's docs) and what the route sends, through `respond`, whose body must
 * type-check against the same codec. A test validates real answers against the generated
 * schemas with unknown fields refused, so a field added to an answer but not here fails it.
 */

/** Send `body` as the JSON answer documented by `codec` (checked at compile time; no cost at run time). */
export function respond<C extends t.Mixed>(res: Response, _codec: C, body: t.OutputOf<C>, status = 200): void {
  res.status(status).json(body);
}

const nullable = <C extends t.Mixed>(c: C) => t.union([c, t.null]);
const ProcessingStatus = t.keyof({ PENDING: null, PROCESSING: null, VERIFIED: null, FAILED: null });
const UploadStatus = t.keyof({ PENDING: null, COMPLETED: null, FAILED: null });
const Failure = t.type({ code: t.string, message: t.string });

// ---- Accounts and API keys -------------------------------------------------------------

export const Tokens = t.type({ accessToken: t.string, refreshToken: t.string, expiresIn: t.number });
export const Registered = t.type({ id: Uuid, email: t.string, name: t.string, createdAt: IsoDateString });
export const Me = t.type({ id: Uuid, email: t.string, name: t.string, emailVerified: t.boolean, mfaEnabled: t.boolean });
export const ApiKeyCreated = t.type({ id: Uuid, name: t.string, key: t.string, createdAt: IsoDateString });
export const ApiKeyList = t.type({ data: t.array(t.type({ id: Uuid, name: t.string, prefix: t.string, createdAt: IsoDateString, lastUsedAt: nullable(IsoDateString) })) });

// ---- Workspaces, members, tags ----------------------------------------------------------

export const WorkspaceCreated = t.type({ id: Uuid, name: t.string, createdAt: IsoDateString });
const WorkspaceSummary = t.type({ id: Uuid, name: t.string, role: Role, createdAt: IsoDateString, documentCount: t.number, memberCount: t.number });
export const WorkspaceList = t.array(WorkspaceSummary);
export const WorkspaceDetail = t.intersection([
  WorkspaceSummary,
  t.type({
    settings: t.intersection([t.type({ allowPublicSearchLinks: t.boolean, defaultDocumentPurpose: Purpose }), t.partial({ requireMfa: t.boolean, requireVerifiedEmail: t.boolean })]),
  }),
]);
export const MemberList = t.array(t.type({ userId: Uuid, email: t.string, name: t.string, role: Role, joinedAt: IsoDateString }));
export const Tag = t.type({ id: Uuid, name: t.string, color: t.string });
export const TagList = t.type({ data: t.array(Tag) });

// ---- Documents --------------------------------------------------------------------------

export const CreatedDocument = t.type({
  id: Uuid,
  title: t.string,
  filename: t.string,
  mimeType: t.string,
  size: t.number,
  purpose: Purpose,
  uploadStatus: t.literal('COMPLETED'),
  processingStatus: ProcessingStatus,
  tags: t.array(Uuid),
  createdAt: IsoDateString,
  updatedAt: IsoDateString,
});
export const DocumentPage = t.type({
  data: t.array(t.type({ id: Uuid, title: t.string, purpose: Purpose, processingStatus: ProcessingStatus, tags: t.array(Uuid), createdAt: IsoDateString, updatedAt: IsoDateString })),
  pagination: t.type({ page: t.number, limit: t.number, total: t.number, pages: t.number }),
});
/** A document as read now (`error` only when FAILED). */
export const DocumentDetail = t.intersection([
  t.type({
    id: Uuid,
    workspaceId: Uuid,
    title: t.string,
    filename: t.string,
    mimeType: t.string,
    size: t.number,
    purpose: Purpose,
    uploadStatus: UploadStatus,
    processingStatus: ProcessingStatus,
    tags: t.array(Tag),
    chunkCount: t.number,
    tokenCount: t.number,
    sizeBytes: t.number,
    createdAt: IsoDateString,
    updatedAt: IsoDateString,
  }),
  t.partial({ error: Failure }),
]);
/** GET .../documents/:docId/text: the text of the last VERIFIED run, now or as of a past time. */
export const DocumentTextAnswer = t.type({
  documentId: t.string,
  asOf: t.union([IsoDateString, t.null]),
  processingId: t.union([t.string, t.null]),
  verifiedAt: t.union([IsoDateString, t.null]),
  tokenCount: t.number,
  sizeBytes: t.number,
  text: t.union([t.string, t.null]),
});
export const ContentAnswer = t.type({ content: t.string, updatedAt: IsoDateString, format: t.keyof({ markdown: null, text: null }) });
export const Reprocessing = t.type({ id: Uuid, processingStatus: t.literal('PROCESSING'), message: t.string });

// ---- Search -----------------------------------------------------------------------------

export const SearchAnswer = t.type({
  query: t.string,
  results: t.array(t.type({ documentId: Uuid, documentTitle: t.string, content: t.string, score: t.number, chunkIndex: t.number, metadata: t.partial({ page: t.number, section: t.string }) })),
  processingTime: t.number,
});
export const PublicSearchAnswer = t.type({
  results: t.array(t.type({ documentId: Uuid, title: t.string, content: t.string, score: t.number, tags: t.array(Uuid) })),
  totalResults: t.number,
});

// ---- Instruction sets -------------------------------------------------------------------

export const SetSummary = t.type({
  id: Uuid,
  workspaceId: Uuid,
  name: t.string,
  description: nullable(t.string),
  isPublic: t.boolean,
  publicUrl: nullable(t.string),
  documentCount: t.number,
  totalSizeBytes: t.number,
  createdAt: IsoDateString,
  updatedAt: IsoDateString,
});
export const SetList = t.type({ data: t.array(SetSummary) });
const SetEntry = t.type({ documentId: Uuid, title: t.string, sizeBytes: t.number, purpose: Purpose, order: t.number });
export const SetDetail = t.intersection([
  SetSummary,
  t.type({
    documents: t.array(SetEntry),
    unavailableDocuments: t.array(t.intersection([t.type({ documentId: Uuid, processingStatus: nullable(ProcessingStatus) }), t.partial({ error: Failure })])),
  }),
]);
export const SetUpdated = t.type({ id: Uuid, name: t.string, description: nullable(t.string), isPublic: t.boolean, publicUrl: nullable(t.string), updatedAt: IsoDateString });
export const SetEntryAdded = SetEntry;
export const SetReordered = t.type({ documents: t.array(t.type({ documentId: Uuid, order: t.number })) });

// ---- Public search links ----------------------------------------------------------------

/** A link as its ADMIN sees it: the token and URL when the sealed token can be opened; `toolProfile` when not default. */
export const SearchLink = t.intersection([
  t.type({
    id: Uuid,
    tokenPrefix: t.string,
    name: t.string,
    allowedTags: t.array(Uuid),
    expiresAt: nullable(IsoDateString),
    historyMode: t.boolean,
    isActive: t.boolean,
    isExpired: t.boolean,
    createdAt: IsoDateString,
    updatedAt: IsoDateString,
    publicUrl: nullable(t.string),
    documentCount: t.number,
  }),
  t.partial({ token: t.string, toolProfile: t.literal('chatgpt') }),
]);
export const SearchLinkList = t.type({ data: t.array(SearchLink) });

// ---- The tool endpoint ------------------------------------------------------------------

/** A JSON-RPC success answer of the tool endpoint (the result's shape is the MCP method's). */
export const RpcResult = t.type({ jsonrpc: t.literal('2.0'), id: t.union([t.string, t.number, t.null]), result: t.UnknownRecord });
