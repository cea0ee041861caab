/**
 * Every client-facing error code. Adding one here without giving it an HTTP status in
 * src/http/errors.ts (an exhaustive `Record<ErrorCode, number>`) does not compile.
 */
export type ErrorCode =
  | 'VALIDATION_ERROR'
  | 'BAD_REQUEST'
  | 'HEADERS_TOO_LARGE'
  | 'QUERY_REQUIRED'
  | 'QUERY_TOO_LONG'
  | 'ANALYTICS_RANGE_TOO_LARGE'
  | 'INVALID_FILE_TYPE'
  | 'FILE_TOO_LARGE'
  | 'SIZE_LIMIT_EXCEEDED'
  | 'DOCUMENT_LIMIT_EXCEEDED'
  | 'DOCUMENT_NOT_VERIFIED'
  | 'CANNOT_REMOVE_OWNER'
  | 'TAG_NOT_ALLOWED'
  | 'UNAUTHORIZED'
  | 'TOKEN_EXPIRED'
  | 'INVALID_CREDENTIALS'
  | 'INVALID_TOKEN'
  | 'MFA_REQUIRED'
  | 'INVALID_MFA_CODE'
  | 'MFA_NOT_ENROLLED'
  | 'MFA_ALREADY_ENABLED'
  | 'MFA_ENROLMENT_REQUIRED'
  | 'EMAIL_NOT_VERIFIED'
  | 'SESSION_NOT_FOUND'
  | 'SSO_NOT_CONFIGURED'
  | 'SSO_FAILED'
  | 'SSO_DOMAIN_NOT_ALLOWED'
  | 'SSO_ACCOUNT_MISMATCH'
  | 'FORBIDDEN'
  | 'PUBLIC_LINKS_DISABLED'
  | 'REGISTRATION_DISABLED'
  | 'NOT_FOUND'
  | 'WORKSPACE_NOT_FOUND'
  | 'DOCUMENT_NOT_FOUND'
  | 'DOCUMENT_TEXT_ERASED'
  | 'USER_NOT_FOUND'
  | 'MEMBER_NOT_FOUND'
  | 'TAG_NOT_FOUND'
  | 'INVITATION_NOT_FOUND'
  | 'API_KEY_NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'REQUEST_TIMEOUT'
  | 'LENGTH_REQUIRED'
  | 'CONFLICT'
  | 'INVALID_STATE'
  | 'MEMBER_EXISTS'
  | 'EMAIL_TAKEN'
  | 'TAG_EXISTS'
  | 'DOCUMENT_ALREADY_IN_SET'
  | 'DOCUMENT_LOCKED'
  | 'EXPIRED'
  | 'INVITATION_EXPIRED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'RATE_LIMITED'
  | 'INTERNAL_ERROR'
  | 'LOG_VERIFICATION_UNAVAILABLE'
  | 'SERVICE_UNAVAILABLE';

/**
 * A rule of the domain said no. `code` is the stable, client-facing error code; the
 * HTTP layer maps codes to statuses in one place (src/http/errors.ts).
 */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const domainError = (code: ErrorCode, message: string, details?: Record<string, unknown>): DomainError =>
  new DomainError(code, message, details);
