import { Request } from 'express';
import * as t from 'io-ts';
import { DomainError, ErrorCode } from '../domain/errors';
import { isUuid, UUID_PATTERN } from '../domain/ids';
import { lengthFirstArray } from './codecs';

/**
 * Every id the service issues is a UUID (randomUUID). Ids are checked at the edge, so a
 * client-chosen string such as `constructor` or `__proto__` never reaches a decider or a
 * read-model key (issue 11, finding 5).
 */
export { isUuid, UUID_PATTERN };

/** A UUID in a request body, normalised to lower case; anything else is a VALIDATION_ERROR. */
export const Uuid = new t.Type<string, string, unknown>(
  'Uuid',
  (u): u is string => isUuid(u) && u === u.toLowerCase(),
  (u, c) => (isUuid(u) ? t.success(u.toLowerCase()) : t.failure(u, c, 'must be a UUID')),
  (s) => s,
);

/** A list of UUIDs in a request body (at most `max`). */
export const UuidList = (max: number) => t.refinement(lengthFirstArray(Uuid, max), (a) => a.length <= max, `at most ${max} ids`);

/**
 * A path parameter naming a resource: a UUID (lower-cased), or the resource is simply not
 * found with the route's own code (never a 500, never a lookup by a non-id).
 */
export function idParam(req: Request, name: string, code: ErrorCode, message: string): string {
  const id = String(req.params[name]);
  if (!isUuid(id)) throw new DomainError(code, message);
  return id.toLowerCase();
}
