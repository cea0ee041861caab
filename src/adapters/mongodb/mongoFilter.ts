import { Document } from 'mongodb';
import { FieldCondition, Filter, FindOptions } from '../../ports/readStore';

const FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Field names are plain top-level identifiers, as in the SQLite store; `id` is stored as `_id`. */
export function mongoField(name: string): string {
  if (!FIELD.test(name)) throw new Error(`invalid field name ${name}`);
  return name === 'id' ? '_id' : name;
}

/** Escapes a literal for use inside a regular expression. */
export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function condition(c: FieldCondition): unknown {
  if (c === null || typeof c !== 'object') return c; // equality; null also matches a missing field
  if ('$in' in c) return { $in: c.$in };
  // $ne matches null and missing fields too, like SQL's `IS NULL OR <>` in the SQLite store.
  if ('$ne' in c) return { $ne: c.$ne };
  if ('$contains' in c) return { $elemMatch: { $eq: c.$contains } };
  if ('$containsAny' in c) return { $elemMatch: { $in: c.$containsAny } };
  if ('$ilike' in c) return { $regex: escapeRegex(c.$ilike), $options: 'i' };
  const range: Record<string, string | number> = {};
  for (const op of ['$gt', '$gte', '$lt', '$lte'] as const) {
    const v = c[op];
    if (v !== undefined) range[op] = v;
  }
  // An empty range places no condition.
  return Object.keys(range).length ? range : undefined;
}

/** The port's filter (a conjunction on top-level fields) as a MongoDB query. */
export function toMongoFilter(filter: Filter): Document {
  const out: Document = {};
  for (const [name, c] of Object.entries(filter)) {
    const q = condition(c);
    if (q !== undefined) out[mongoField(name)] = q;
  }
  return out;
}

/** Sort as [field, direction] pairs, `_id` last so that ties have a stable order (as in the SQLite store). */
export function toMongoSort(sort: FindOptions['sort'] = []): [string, 1 | -1][] {
  const pairs: [string, 1 | -1][] = sort.map((s) => [mongoField(s.field), s.direction === 'desc' ? -1 : 1]);
  if (!pairs.some(([f]) => f === '_id')) pairs.push(['_id', 1]);
  return pairs;
}
