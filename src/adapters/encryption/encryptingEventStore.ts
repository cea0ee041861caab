import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { NewEvent, RecordedEvent } from '../../domain/event';
import { AppendResult, EventBatchHandler, EventStore, ExpectedRevision, Subscription } from '../../ports/eventStore';
import { KeyStore } from '../../ports/keyStore';
import { upcast } from '../../core/upcasters';
import { encryptedPathsOf } from '../../domain/eventCatalog';
import { documentIdOf, mapPath } from './documentText';

/** Marks a sealed field: `kbenc1:` + base64(iv ‖ tag ‖ ciphertext). */
export const SEALED_PREFIX = 'kbenc1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * IVs are drawn from the CSPRNG a block at a time (one call per IV_BLOCK seals: a call of its
 * own cost about a third of a seal) and each is used once: GCM asks only that an IV never
 * repeats under a key, and 96 random bits do not.
 */
const IV_BLOCK = 256;
let ivs = Buffer.alloc(0);
let ivAt = 0;
function nextIv(): Buffer {
  if (ivAt + IV_BYTES > ivs.length) {
    ivs = randomBytes(IV_BYTES * IV_BLOCK);
    ivAt = 0;
  }
  const iv = ivs.subarray(ivAt, ivAt + IV_BYTES);
  ivAt += IV_BYTES;
  return iv;
}

/** `aad`: the document id, as text or (sealing many fields of one event) its bytes. */
export function seal(key: Buffer, plaintext: string, aad: string | Buffer): string {
  const iv = nextIv();
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(typeof aad === 'string' ? Buffer.from(aad, 'utf8') : aad);
  const ct = cipher.update(plaintext, 'utf8');
  const last = cipher.final();
  // iv ‖ tag ‖ ciphertext, written once into one buffer.
  const out = Buffer.allocUnsafe(IV_BYTES + TAG_BYTES + ct.length + last.length);
  iv.copy(out, 0);
  cipher.getAuthTag().copy(out, IV_BYTES);
  ct.copy(out, IV_BYTES + TAG_BYTES);
  last.copy(out, IV_BYTES + TAG_BYTES + ct.length);
  return SEALED_PREFIX + out.toString('base64');
}

/** `aad`: the document id the field was sealed with, as text or (opening many fields of one event) its bytes. */
export function open(key: Buffer, sealed: string, aad: string | Buffer): string {
  const raw = Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  decipher.setAAD(typeof aad === 'string' ? Buffer.from(aad, 'utf8') : aad);
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  const plain = decipher.update(raw.subarray(IV_BYTES + TAG_BYTES));
  // final() checks the tag (it throws on a wrong key, id or text); GCM gives no bytes there.
  const last = decipher.final();
  return (last.length === 0 ? plain : Buffer.concat([plain, last])).toString('utf8');
}

/** Decryption done in one go before reads let the event loop take a turn. */
const OPEN_SLICE_MS = 8;

/** The plaintext kept of recently sealed or opened events (UTF-16 characters). */
export const PLAINTEXT_CACHE_CHARS = 8 * 1024 * 1024;

/**
 * The plaintext of the sealed fields of recent events, by event id, in the order `mapPath`
 * visits them. Every follower of the log (the projections' feed, the processor, the process
 * managers, the re-embedder) opens each new event, one after the other: with this cache the
 * first (or the append itself) pays for the decryption, the others read it here. Bounded,
 * oldest first out. It is read only while the document's key exists: once the key is
 * destroyed the event opens as erased, whatever is cached, and `forget` drops the document's
 * entries.
 */
class PlaintextCache {
  private readonly entries = new Map<string, { documentId: string; values: string[]; chars: number }>();
  private chars = 0;

  constructor(private readonly maxChars: number) {}

  get(eventId: string): string[] | undefined {
    return this.entries.get(eventId)?.values;
  }

  set(eventId: string, documentId: string, values: string[]): void {
    const chars = values.reduce((n, v) => n + v.length, 0);
    if (chars > this.maxChars || this.entries.has(eventId)) return;
    this.entries.set(eventId, { documentId, values, chars });
    this.chars += chars;
    for (const [id, entry] of this.entries) {
      if (this.chars <= this.maxChars) break;
      this.entries.delete(id);
      this.chars -= entry.chars;
    }
  }

  forget(documentId: string): void {
    for (const [id, entry] of this.entries) {
      if (entry.documentId !== documentId) continue;
      this.entries.delete(id);
      this.chars -= entry.chars;
    }
  }
}

/**
 * Decorator of the EventStore port: document text in events (the `encrypted` traits each event type declares) is
 * stored sealed with the document's own data key (AES-256-GCM) and opened again on read.
 * Once the key is destroyed, readers get the event with those fields as empty strings and
 * `data.erased = true`, so every read model, index, rebuild and export sees no text, while
 * the event itself (who did what, when) and the hash chain stay intact.
 * Reads also upcast old schema versions to the current shape.
 */
export class EncryptingEventStore implements EventStore {
  private readonly plaintext = new PlaintextCache(PLAINTEXT_CACHE_CHARS);
  private readonly forgettingKeys: KeyStore;

  constructor(
    private readonly inner: EventStore,
    private readonly keys: KeyStore,
  ) {
    this.forgettingKeys = {
      get: (id) => keys.get(id),
      getOrCreate: (id) => keys.getOrCreate(id),
      destroy: async (id) => {
        await keys.destroy(id);
        this.plaintext.forget(id);
      },
      isDestroyed: (id) => keys.isDestroyed(id),
      close: () => keys.close(),
    };
  }

  /** The event sealed, and the plaintext of its sealed fields in visiting order (none when it seals nothing or was erased). */
  private async sealEvent(e: NewEvent): Promise<{ event: NewEvent; documentId?: string; values?: string[] }> {
    const paths = encryptedPathsOf(e.type);
    if (paths.length === 0) return { event: e };
    const documentId = documentIdOf(e.data);
    if (!documentId) return { event: e };
    const key = await this.keys.getOrCreate(documentId);
    let erased = false;
    let data = e.data;
    const values: string[] = [];
    const aad = Buffer.from(documentId, 'utf8');
    for (const path of paths) {
      data = mapPath(data, path, (v) => {
        values.push(v);
        if (v.length === 0) return v;
        // The document was erased while this text was on its way: never store it.
        if (!key) {
          erased = true;
          return '';
        }
        return seal(key, v, aad);
      });
    }
    if (erased) return { event: { ...e, data: { ...(data as Record<string, unknown>), erased: true } } };
    return { event: { ...e, data }, documentId, values };
  }

  /** The event with its sealed fields opened with `key` (null: the key was destroyed, the text reads as erased). */
  private openWithKey(e: RecordedEvent, paths: readonly (readonly string[])[], documentId: string, key: Buffer | null): RecordedEvent {
    // Read only while the key exists: an erased document's text is never served from memory.
    const cached = key ? this.plaintext.get(e.id) : undefined;
    const values: string[] = [];
    let erased = false;
    let data = e.data;
    let aad: Buffer | undefined;
    for (const path of paths) {
      data = mapPath(data, path, (v) => {
        const i = values.length;
        if (!v.startsWith(SEALED_PREFIX)) {
          values.push(v);
          return v;
        }
        if (!key) {
          erased = true;
          values.push('');
          return '';
        }
        const plain = cached !== undefined && i < cached.length ? cached[i] : open(key, v, (aad ??= Buffer.from(documentId, 'utf8')));
        values.push(plain);
        return plain;
      });
    }
    if (erased) data = { ...(data as Record<string, unknown>), erased: true };
    else if (!cached) this.plaintext.set(e.id, documentId, values);
    return upcast({ ...e, data });
  }

  /**
   * Most events seal nothing: upcast those in place. The others' keys are fetched together,
   * then the events are opened in order, with the event loop's turn every OPEN_SLICE_MS of
   * decryption (a large document read whole, as the search index does at DocumentVerified,
   * would otherwise hold the loop for its whole text at once).
   */
  private async openAll(events: RecordedEvent[]): Promise<RecordedEvent[]> {
    const out = new Array<RecordedEvent>(events.length);
    const sealed: { i: number; paths: readonly (readonly string[])[]; documentId: string }[] = [];
    events.forEach((e, i) => {
      const paths = encryptedPathsOf(e.type);
      const documentId = paths.length ? documentIdOf(e.data) : null;
      if (!documentId) out[i] = upcast(e);
      else sealed.push({ i, paths, documentId });
    });
    if (sealed.length === 0) return out;
    const ids = [...new Set(sealed.map((s) => s.documentId))];
    const fetchKeys = async (): Promise<Map<string, Buffer | null>> => new Map(await Promise.all(ids.map(async (id) => [id, await this.keys.get(id)] as const)));
    let keys = await fetchKeys();
    let sliceStart = performance.now();
    for (const s of sealed) {
      out[s.i] = this.openWithKey(events[s.i], s.paths, s.documentId, keys.get(s.documentId) ?? null);
      if (performance.now() - sliceStart > OPEN_SLICE_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        keys = await fetchKeys(); // a key destroyed meanwhile is seen by the rest of the batch
        sliceStart = performance.now();
      }
    }
    return out;
  }

  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    const sealed = await Promise.all(events.map((e) => this.sealEvent(e)));
    const result = await this.inner.append(
      streamId,
      sealed.map((s) => s.event),
      expected,
    );
    // The followers of the log open these next: they read the text from memory.
    for (const s of sealed) if (s.documentId && s.values) this.plaintext.set(s.event.id, s.documentId, s.values);
    return result;
  }

  async readStream(streamId: string, fromRevision?: number, types?: ReadonlySet<string>): Promise<RecordedEvent[]> {
    const read = await this.inner.readStream(streamId, fromRevision, types);
    // Only those types are opened, whatever the inner store gave.
    return this.openAll(types === undefined ? read : read.filter((e) => types.has(e.type)));
  }

  async readAll(afterPosition: number, maxCount: number): Promise<RecordedEvent[]> {
    return this.openAll(await this.inner.readAll(afterPosition, maxCount));
  }

  headPosition(): Promise<number> {
    return this.inner.headPosition();
  }

  subscribe(afterPosition: number, handler: EventBatchHandler, onError?: (err: unknown) => void): Subscription {
    return this.inner.subscribe(afterPosition, async (events) => handler(await this.openAll(events)), onError);
  }

  async close(): Promise<void> {
    await this.inner.close();
    await this.keys.close();
  }

  /** The data keys (the erasure service destroys them): destroying one here also drops the document's cached plaintext. */
  get keyStore(): KeyStore {
    return this.forgettingKeys;
  }

  /** The key store this store was given (without the forgetting of `keyStore`). */
  get wrappedKeyStore(): KeyStore {
    return this.keys;
  }

  /** The wrapped store (tools that must see the stored bytes, such as verify). */
  get wrapped(): EventStore {
    return this.inner;
  }
}
