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

/**
 * Send `body` as the JSON answer documented by `codec` (checked at compile time; no cost at run time).
 *
 * The bytes and headers are those of express's `res.status(status).json(body)` (the app sets no
 * JSON replacer, spaces or escape, and no ETag), written directly: express's `json` → `send`
 * looks up four settings, parses and formats the content type twice and checks freshness on
 * every answer. An answer express could treat otherwise goes through express: a status other
 * than 200–202, a type, length, validator or transfer encoding already set, or a conditional
 * GET/HEAD/QUERY (express answers `If-None-Match: *` with 304).
 */
export function respond<C extends t.Mixed>(res: Response, _codec: C, body: t.OutputOf<C>, status = 200): void {
  const req = res.req;
  const json: unknown = JSON.stringify(body);
  if (
    typeof json !== 'string' ||
    (status !== 200 && status !== 201 && status !== 202) ||
    res.hasHeader('Content-Type') ||
    res.hasHeader('Content-Length') ||
    res.hasHeader('Transfer-Encoding') ||
    res.hasHeader('ETag') ||
    res.hasHeader('Last-Modified') ||
    ((req.method === 'GET' || req.method === 'HEAD' || req.method === 'QUERY') && (req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined))
  ) {
    res.status(status).json(body);
    return;
  }
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(json, 'utf8'));
  if (req.method === 'HEAD') res.end();
  else res.end(json, 'utf8');
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

// ---- Identity flows ---------------------------------------------------------------------

const AuthMethod = t.keyof({ session: null, api_key: null, public_token: null, system: null });
export const EmailVerified = t.type({ emailVerified: t.literal(true) });
/** 202: `sent` is false when the address is already verified (nothing is mailed). */
export const VerificationResent = t.type({ emailVerified: t.boolean, sent: t.boolean });
/** 202, the same whether or not the address has an account. */
export const ResetRequested = t.type({ message: t.string });
export const PasswordReset = t.type({ passwordReset: t.literal(true), sessionsRevoked: t.literal(true) });
export const InvitationSignup = t.type({
  user: t.type({ id: Uuid, email: t.string, emailVerified: t.literal(true) }),
  workspaceId: Uuid,
  accessToken: t.string,
  refreshToken: t.string,
  expiresIn: t.number,
});
/** A single sign-on finished outside the console (`created`: the account was made by this sign-in). */
export const SsoSignedIn = t.type({ user: t.type({ id: Uuid, email: t.string, created: t.boolean }), accessToken: t.string, refreshToken: t.string, expiresIn: t.number });
export const SignInOptions = t.type({ registration: t.boolean, sso: t.boolean });
/** The account's live sessions (`ipHash`: keyed hash of the client IP; null fields on sessions from before they were recorded). */
export const SessionList = t.type({
  data: t.array(
    t.type({
      id: Uuid,
      device: nullable(t.string),
      createdAt: nullable(IsoDateString),
      lastUsedAt: nullable(IsoDateString),
      ipHash: nullable(t.string),
      expiresAt: IsoDateString,
      current: t.boolean,
    }),
  ),
});
export const SessionsRevoked = t.type({ revoked: t.number });
/** The account's security trail, newest first (`summary`: the event's whitelisted fields). */
export const SecurityEventList = t.type({ data: t.array(t.type({ id: Uuid, occurredAt: IsoDateString, action: t.string, authMethod: AuthMethod, summary: t.UnknownRecord })) });
/** 201: the TOTP secret, shown once (base32, and as an otpauth:// URI). */
export const TotpEnrollment = t.type({ otpauthUri: t.string, secret: t.string });
export const TotpConfirmed = t.type({ mfaEnabled: t.literal(true), recoveryCodes: t.array(t.string) });
export const TotpDisabled = t.type({ mfaEnabled: t.literal(false) });
/** The web console's sign-in and renewal: the access token only (the refresh token rides in the httpOnly cookie). */
export const ConsoleAccess = t.type({ accessToken: t.string, expiresIn: t.number });

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
export const Member = t.type({ userId: Uuid, email: t.string, name: t.string, role: Role, joinedAt: IsoDateString });
export const MemberList = t.array(Member);
/** 201: the invitation made (the link is mailed to the address). */
export const InvitationCreated = t.type({ invitationId: Uuid, email: t.string, role: Role, expiresAt: IsoDateString });
/** Invitations not yet accepted, newest first (at most 200; `total` counts them all). */
export const InvitationList = t.type({
  data: t.array(t.type({ id: Uuid, email: t.string, role: Role, createdAt: IsoDateString, expiresAt: IsoDateString, status: t.keyof({ PENDING: null, EXPIRED: null }) })),
  total: t.number,
});
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
const LinkUsageSummary = t.type({
  requests: t.number,
  errors: t.number,
  /** Uses per channel (`http`: the public search, `mcp`: the tool endpoint, `s`: GET /s/<linkId>); a channel not used is absent. */
  byChannel: t.partial({ http: t.number, mcp: t.number, s: t.number }),
  latencyMs: t.type({ p50: nullable(t.number), p95: nullable(t.number) }),
  distinctClients: t.number,
});
/** A link's usage over the last `hours` hours, in total and per hour (hours without use are absent). */
export const LinkUsage = t.type({
  linkId: Uuid,
  historyMode: t.boolean,
  window: t.type({ from: IsoDateString, to: IsoDateString, hours: t.number }),
  totals: LinkUsageSummary,
  hourly: t.array(t.intersection([t.type({ hour: IsoDateString }), LinkUsageSummary])),
  storedQueries: t.number,
});
/** A page of a link's stored query texts (history mode), newest first; `nextBefore` is the next page's `before`. */
export const LinkQueryPage = t.type({
  data: t.array(t.type({ query: t.string, at: IsoDateString })),
  nextBefore: nullable(IsoDateString),
  retentionDays: t.number,
  historyMode: t.boolean,
});

// ---- Audit and analytics ----------------------------------------------------------------

/** One page of a workspace's audit trail, newest first (`nextCursor`: the next page's `cursor`). */
export const AuditPage = t.type({
  data: t.array(
    t.type({
      id: Uuid,
      position: t.number,
      time: IsoDateString,
      actor: t.type({ userId: nullable(t.string), email: nullable(t.string), authMethod: AuthMethod }),
      action: t.string,
      subject: t.type({ type: t.string, id: t.string }),
      summary: t.UnknownRecord,
      correlationId: t.string,
    }),
  ),
  nextCursor: nullable(t.string),
});
/** The hash chain walked: where it first breaks (another workspace's event by position only). */
export const LogVerificationAnswer = t.type({
  ok: t.boolean,
  checked: t.number,
  workspaceEvents: t.number,
  headPosition: t.number,
  firstBreak: nullable(t.intersection([t.type({ position: t.number, reason: t.string, inThisWorkspace: t.boolean }), t.partial({ id: Uuid, type: t.string })])),
  startedAt: IsoDateString,
  finishedAt: IsoDateString,
});
const Spread = t.type({ p50: nullable(t.number), p95: nullable(t.number), max: nullable(t.number) });
const ChannelStats = t.type({ searches: t.number, zeroResults: t.number, latencyMs: Spread });
/** GET /workspaces/:id/analytics: counts over [from, to), per bucket of `interval`; `asOf` when answered as of a past time. */
export const AnalyticsAnswer = t.type({
  workspaceId: Uuid,
  from: IsoDateString,
  to: IsoDateString,
  interval: t.keyof({ hour: null, day: null, week: null }),
  asOf: nullable(IsoDateString),
  documents: t.type({ added: t.number, deleted: t.number }),
  processing: t.type({
    runs: t.number,
    verified: t.number,
    failed: t.number,
    unfinished: t.number,
    failuresByCode: t.array(t.type({ code: t.string, count: t.number })),
    uploadToVerifiedMs: t.intersection([t.type({ count: t.number }), Spread]),
    runDurationMs: t.intersection([t.type({ count: t.number }), Spread]),
  }),
  searches: t.intersection([ChannelStats, t.type({ byChannel: t.type({ workspace: ChannelStats, link: ChannelStats, tool: ChannelStats }) })]),
  topDocuments: t.array(t.type({ documentId: Uuid, hits: t.number })),
  /** Per public link used in the range (`name` null for a link since deleted); `topQueries` only for a history-mode link, and not as of a past time. */
  links: t.array(
    t.intersection([
      t.type({ linkId: Uuid, name: nullable(t.string), historyMode: t.boolean }),
      ChannelStats,
      t.type({ byChannel: t.type({ link: t.number, tool: t.number }) }),
      t.partial({ topQueries: t.array(t.type({ query: t.string, count: t.number })) }),
    ]),
  ),
  series: t.array(t.type({ start: IsoDateString, documentsAdded: t.number, documentsDeleted: t.number, verified: t.number, failed: t.number, workspace: t.number, link: t.number, tool: t.number })),
});

// ---- The tool endpoint ------------------------------------------------------------------

/** A JSON-RPC success answer of the tool endpoint (the result's shape is the MCP method's). */
export const RpcResult = t.type({ jsonrpc: t.literal('2.0'), id: t.union([t.string, t.number, t.null]), result: t.UnknownRecord });

// ---- The service itself -----------------------------------------------------------------

/** GET /healthz: the process is up (`role` on the health port of the projector and worker roles). */
export const Health = t.intersection([t.type({ status: t.literal('ok') }), t.partial({ role: t.keyof({ all: null, api: null, projector: null, worker: null }) })]);

/**
 * GET /readyz (200 when `ready`, 503 otherwise): `warming` while the embedding model loads
 * (`embeddings: failed` with `embeddingsError` when its load failed), `catching_up` while the
 * projections are more than 1,000 events behind the log (`head`, `projected`); during an
 * embedding model change, `reembedding` counts the documents that have the new model's vectors.
 */
export const Readiness = t.intersection([
  t.type({
    status: t.keyof({ ready: null, warming: null, catching_up: null }),
    head: t.number,
    projected: t.number,
    embeddings: t.keyof({ warming: null, ready: null, failed: null }),
  }),
  t.partial({
    embeddingsError: t.string,
    embeddingsWarmupMs: t.number,
    reembedding: t.type({ from: t.string, to: t.string, done: t.number, total: t.number }),
  }),
]);

/** GET /openapi.json: this API's description (OpenAPI 3.1); paths map to methods, methods to operations. */
export const ApiDescription = t.type({
  openapi: t.literal('3.1.0'),
  info: t.type({ title: t.string, version: t.string, description: t.string }),
  servers: t.array(t.type({ url: t.string })),
  paths: t.record(t.string, t.record(t.string, t.UnknownRecord)),
  components: t.type({ securitySchemes: t.record(t.string, t.UnknownRecord), responses: t.record(t.string, t.UnknownRecord) }),
});
