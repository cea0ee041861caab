/**
 * A rule of the domain said no. `code` is the stable, client-facing error code; the
 * HTTP layer maps codes to statuses in one place (src/http/errors.ts).
 */
export class DomainError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const domainError = (code: string, message: string, details?: Record<string, unknown>): DomainError =>
  new DomainError(code, message, details);
