/**
 * The bound on one event: its JSON (`{type, data, metadata}`, as the log and `kb export`
 * hold it, before the encrypting store seals its text) is at most MAX_EVENT_BYTES.
 *
 * Why 256 KiB: sealing turns each text field into base64 of its ciphertext (about 4/3 of
 * it, plus 28 bytes of IV and tag per field), so a stored event stays under about 350 KiB,
 * well under EventStoreDB's default append limit (1 MiB per append) and Kafka's default
 * `message.max.bytes` (about 1 MB) with room for the envelope. Producers of large payloads
 * (a document's text, its chunks, its vectors) split them across events by the budgets
 * below; the command handler refuses any event over the bound (PAYLOAD_TOO_LARGE).
 */
export const MAX_EVENT_BYTES = 256 * 1024;

/** What the payload of a split event (sections, chunks, vectors) may take: the rest is left for ids and metadata. */
export const EVENT_PAYLOAD_BUDGET = 192 * 1024;

/** UTF-8 bytes of a value's JSON. */
export const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');

/** UTF-8 bytes of an event's JSON as the log holds it (before sealing). */
export const eventBytes = (e: { type: string; data: unknown; metadata?: unknown }): number => jsonBytes({ type: e.type, data: e.data, metadata: e.metadata });

/**
 * Items in consecutive batches, each at most `maxItems` long and (unless one item alone is
 * larger) at most `budget` bytes of JSON; the order is kept.
 */
export function batchesByBytes<T>(items: readonly T[], budget: number, maxItems = Number.MAX_SAFE_INTEGER): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let bytes = 2;
  for (const item of items) {
    const size = jsonBytes(item) + 1;
    if (current.length > 0 && (bytes + size > budget || current.length >= maxItems)) {
      out.push(current);
      current = [];
      bytes = 2;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}
