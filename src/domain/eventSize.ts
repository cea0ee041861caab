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
  const batcher = new ByteBatcher<T>(budget, maxItems);
  const out: T[][] = [];
  for (const item of items) {
    const full = batcher.push(item);
    if (full) out.push(full);
  }
  const last = batcher.flush();
  if (last) out.push(last);
  return out;
}

/** `batchesByBytes` one item at a time: `push` returns a batch when the item starts the next one, `flush` the last. */
export class ByteBatcher<T> {
  private current: T[] = [];
  private bytes = 2;

  constructor(
    private readonly budget: number,
    private readonly maxItems = Number.MAX_SAFE_INTEGER,
  ) {}

  push(item: T): T[] | undefined {
    const size = jsonBytes(item) + 1;
    let full: T[] | undefined;
    if (this.current.length > 0 && (this.bytes + size > this.budget || this.current.length >= this.maxItems)) {
      full = this.current;
      this.current = [];
      this.bytes = 2;
    }
    this.current.push(item);
    this.bytes += size;
    return full;
  }

  flush(): T[] | undefined {
    if (this.current.length === 0) return undefined;
    const last = this.current;
    this.current = [];
    this.bytes = 2;
    return last;
  }
}
