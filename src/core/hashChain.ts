import { createHash } from 'node:crypto';

/** The hash the first event of the log chains to. */
export const GENESIS_HASH = '0'.repeat(64);

/** Canonical JSON (sorted keys) so the hash of an event does not depend on key order. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
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
