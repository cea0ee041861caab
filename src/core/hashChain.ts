import { createHash } from 'node:crypto';

/** The hash the first event of the log chains to. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * Canonical JSON (sorted keys) so the hash of an event does not depend on key order. Keys
 * sort by UTF-16 code units; undefined members are left out; an undefined, function or symbol
 * elsewhere is `null`. Built by concatenation, without the intermediate arrays of entries (it
 * runs over every appended and every verified event).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    // A hole of a sparse array is empty, as Array.prototype.join leaves it.
    for (let i = 0; i < value.length; i++) out += (i ? ',' : '') + (Object.prototype.hasOwnProperty.call(value, i) ? canonicalJson(value[i]) : '');
    return `${out}]`;
  }
  const object = value as { [key: string]: unknown };
  const keys = Object.keys(object).sort();
  let out = '{';
  let first = true;
  for (const k of keys) {
    const v = object[k];
    if (v === undefined) continue;
    out += `${first ? '' : ','}${JSON.stringify(k)}:${canonicalJson(v)}`;
    first = false;
  }
  return `${out}}`;
}

/** SHA-256 chaining an event to the previous hash in the log. */
export function chainHash(
  prevHash: string,
  e: { id: string; streamId: string; revision: number; position: number; type: string; data: unknown; metadata: unknown },
): string {
  return createHash('sha256')
    .update(prevHash)
    .update(
      canonicalJson({ id: e.id, streamId: e.streamId, revision: e.revision, position: e.position, type: e.type, data: e.data, metadata: e.metadata }),
    )
    .digest('hex');
}
