import { Request, Response } from 'express';
import { DomainError, ErrorCode } from '../domain/errors';
import { RPC } from '../mcp/protocol';

/** Every error code with its HTTP status (the OpenAPI document lists them). */
export const errorStatuses = (): [ErrorCode, number][] => Object.entries(STATUS) as [ErrorCode, number][];

/** Exhaustive: a code without a status (or a status for no code) does not compile. */
const STATUS: Record<ErrorCode, number> = {
  VALIDATION_ERROR: 400,
  ANALYTICS_RANGE_TOO_LARGE: 400,
  BAD_REQUEST: 400,
  // The request's header block passed node's limit (--max-http-header-size): answered by src/http/clientErrors.ts.
  HEADERS_TOO_LARGE: 431,
  QUERY_REQUIRED: 400,
  QUERY_TOO_LONG: 400,
  INVALID_FILE_TYPE: 400,
  FILE_TOO_LARGE: 400,
  SIZE_LIMIT_EXCEEDED: 400,
  DOCUMENT_LIMIT_EXCEEDED: 400,
  DOCUMENT_NOT_VERIFIED: 400,
  CANNOT_REMOVE_OWNER: 400,
  TAG_NOT_ALLOWED: 400,
  UNAUTHORIZED: 401,
  TOKEN_EXPIRED: 401,
  INVALID_CREDENTIALS: 401,
  // A mailed link that is forged, unknown or already used.
  INVALID_TOKEN: 400,
  // Password was right; send the challenge and a code to POST /v1/auth/login/mfa.
  MFA_REQUIRED: 401,
  INVALID_MFA_CODE: 401,
  MFA_NOT_ENROLLED: 400,
  MFA_ALREADY_ENABLED: 409,
  // The workspace requires members to use a second factor (settings.requireMfa).
  MFA_ENROLMENT_REQUIRED: 403,
  // The workspace requires verified e-mail addresses (settings.requireVerifiedEmail).
  EMAIL_NOT_VERIFIED: 403,
  SESSION_NOT_FOUND: 404,
  SSO_NOT_CONFIGURED: 404,
  // The provider refused, the state or PKCE check failed, or the address is not verified there.
  SSO_FAILED: 401,
  SSO_DOMAIN_NOT_ALLOWED: 403,
  SSO_ACCOUNT_MISMATCH: 409,
  FORBIDDEN: 403,
  PUBLIC_LINKS_DISABLED: 403,
  REGISTRATION_DISABLED: 403,
  NOT_FOUND: 404,
  WORKSPACE_NOT_FOUND: 404,
  DOCUMENT_NOT_FOUND: 404,
  USER_NOT_FOUND: 404,
  MEMBER_NOT_FOUND: 404,
  TAG_NOT_FOUND: 404,
  INVITATION_NOT_FOUND: 404,
  API_KEY_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  LENGTH_REQUIRED: 411,
  CONFLICT: 409,
  // A processing step out of order (a stale or duplicate worker): the state moved on.
  INVALID_STATE: 409,
  MEMBER_EXISTS: 409,
  EMAIL_TAKEN: 409,
  TAG_EXISTS: 409,
  DOCUMENT_ALREADY_IN_SET: 409,
  DOCUMENT_LOCKED: 409,
  EXPIRED: 410,
  INVITATION_EXPIRED: 410,
  DOCUMENT_TEXT_ERASED: 410,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  // The configured event store keeps no hash chain this process can walk (EventStoreDB).
  LOG_VERIFICATION_UNAVAILABLE: 501,
  SERVICE_UNAVAILABLE: 503,
};

const SUGGESTIONS: Partial<Record<ErrorCode, string>> = {
  ANALYTICS_RANGE_TOO_LARGE: 'Narrow from/to, or use a wider interval.',
  VALIDATION_ERROR: 'Check the request body against the API reference: field names, types and length limits.',
  SIZE_LIMIT_EXCEEDED: 'Remove a document from the set or add a smaller one; a set holds at most 102400 bytes of text.',
  DOCUMENT_LIMIT_EXCEEDED: 'A set holds at most 20 documents: remove one first or create another set.',
  DOCUMENT_NOT_VERIFIED: 'Wait until the document has finished processing (processingStatus VERIFIED), or reprocess it if it FAILED.',
  DOCUMENT_ALREADY_IN_SET: 'The document is already in this set; use reorder to change its position.',
  CONFLICT: 'Someone else changed this resource: fetch it again, re-apply your change and send the new updatedAt as expectedUpdatedAt.',
  NOT_FOUND: 'Check the identifier; it may have been deleted or belong to a workspace you are not a member of.',
  UNAUTHORIZED: 'Send a valid access token or API key as Authorization: Bearer <token>.',
  TOKEN_EXPIRED: 'Obtain a new access token with POST /v1/auth/refresh.',
  MFA_REQUIRED: 'Send details.challenge with a code from your authenticator app to POST /v1/auth/login/mfa.',
  MFA_ENROLMENT_REQUIRED: 'Enable two-factor authentication (POST /v1/auth/mfa/totp) to use this workspace.',
  EMAIL_NOT_VERIFIED: 'Verify your e-mail address (POST /v1/auth/resend-verification sends a new link).',
  FORBIDDEN: 'This action needs the ADMIN or OWNER role in the workspace.',
  PUBLIC_LINKS_DISABLED: 'Enable settings.allowPublicSearchLinks on the workspace (PUT /v1/workspaces/:id) first.',
  REQUEST_TIMEOUT: 'Send the whole request body promptly; large files go to the upload route, which allows more time.',
  RATE_LIMITED: 'Slow down and retry after the number of seconds in the Retry-After header.',
  WORKSPACE_NOT_FOUND: 'Check the workspace id and that you are a member of it.',
  INTERNAL_ERROR: 'Retry later; if it persists, contact the operator with the X-Request-Id header value.',
};

export function statusOf(code: ErrorCode): number {
  return STATUS[code];
}

/**
 * The 4xx status an error raised by a body parser or other middleware carries (http-errors'
 * `status`/`statusCode`), or undefined: anything without one is a bug of ours (500).
 */
export function clientErrorStatus(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { status?: unknown; statusCode?: unknown };
  const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : undefined;
  return status !== undefined && Number.isInteger(status) && status >= 400 && status <= 499 ? status : undefined;
}

export type ErrorFamily = 'v1' | 'api' | 'public' | 'mcp';

/** Which envelope a path answers in (decisions.md, "Errors"). */
export function familyOf(path: string): ErrorFamily {
  // Public routes are also served under the self-hosted base (/api/v1/public/..., /api/v1/mcp/...).
  const bare = path.replace(/^\/(api\/v1|v1)(?=\/(public|s)\/|\/mcp(\/|$))/, '');
  if (bare !== path) return familyOf(bare);
  if (path.startsWith('/v1/') || path === '/v1' || path.startsWith('/api/v1/') || path === '/api/v1') return 'v1';
  if (path.startsWith('/api/')) return 'api';
  // The tool endpoint's prefix, the bare one included: every answer under it is a JSON-RPC message.
  if (path.startsWith('/mcp/') || path === '/mcp') return 'mcp';
  return 'public';
}

/** An HTTP-level error with a code (bad JSON, body too large, ...). */
export class HttpError extends DomainError {
  constructor(
    readonly status: number,
    code: ErrorCode,
    message: string,
    details?: Record<string, unknown>,
    readonly headers: Record<string, string> = {},
  ) {
    super(code, message, details);
  }
}

/**
 * An HTTP-level error under the tool endpoint's prefix as the JSON-RPC error it answers
 * (spec section 7, "Tool endpoint"): no id (none was read), a JSON-RPC code by the status's
 * kind, and the status kept. Refusals of the credential are -32002, rate limits -32000 with
 * `data.retryAfter`, our failures -32603, anything else about the request (an unknown path, a
 * method, a body that could not be read) -32600.
 */
function rpcErrorOf(status: number, err: DomainError): { jsonrpc: '2.0'; id: null; error: { code: number; message: string; data?: { retryAfter: number } } } {
  const code = status === 401 || status === 403 ? RPC.FORBIDDEN : status === 429 ? RPC.RATE_LIMITED : status >= 500 ? RPC.INTERNAL_ERROR : RPC.INVALID_REQUEST;
  const retryAfter = err instanceof HttpError ? Number(err.headers['Retry-After']) : NaN;
  return { jsonrpc: '2.0', id: null, error: { code, message: err.message, ...(code === RPC.RATE_LIMITED && Number.isFinite(retryAfter) ? { data: { retryAfter } } : {}) } };
}

/** `path`: the request's path as the app sees it (inside a mounted router `req.path` has lost its prefix). */
export function sendError(req: Request, res: Response, err: DomainError, path: string = req.path): void {
  const status = err instanceof HttpError ? err.status : statusOf(err.code);
  if (err instanceof HttpError) for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  // A refusal under load says when to come back (a search's turns: src/search/searchTurns.ts).
  const retryAfter = err.details?.retryAfter;
  if (status === 503 && typeof retryAfter === 'number' && !res.hasHeader('Retry-After')) res.setHeader('Retry-After', String(retryAfter));
  const family = familyOf(path);
  if (family === 'mcp') {
    res.status(status).json(rpcErrorOf(status, err));
  } else if (family === 'public') {
    res.status(status).json({ error: err.code, message: err.message });
  } else if (family === 'api') {
    res.status(status).json({
      error: { code: err.code, message: err.message, details: err.details ?? {}, suggestion: SUGGESTIONS[err.code] ?? 'Check the request and try again.' },
    });
  } else {
    res.status(status).json({ error: { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) } });
  }
}
