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

export function seal(key: Buffer, plaintext: string, aad: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return SEALED_PREFIX + Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64');
}

export function open(key: Buffer, sealed: string, aad: string): string {
  const raw = Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
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
  constructor(
    private readonly inner: EventStore,
    private readonly keys: KeyStore,
  ) {}

  private async sealEvent(e: NewEvent): Promise<NewEvent> {
    const paths = encryptedPathsOf(e.type);
    if (paths.length === 0) return e;
    const documentId = documentIdOf(e.data);
    if (!documentId) return e;
    const key = await this.keys.getOrCreate(documentId);
    let erased = false;
    let data = e.data;
    for (const path of paths) {
      data = mapPath(data, path, (v) => {
        if (v.length === 0) return v;
        // The document was erased while this text was on its way: never store it.
        if (!key) {
          erased = true;
          return '';
        }
        return seal(key, v, documentId);
      });
    }
    if (erased) data = { ...(data as Record<string, unknown>), erased: true };
    return { ...e, data };
  }

  private async openEvent(e: RecordedEvent): Promise<RecordedEvent> {
    const paths = encryptedPathsOf(e.type);
    const documentId = paths.length ? documentIdOf(e.data) : null;
    if (!documentId) return upcast(e);
    const key = await this.keys.get(documentId);
    let erased = false;
    let data = e.data;
    for (const path of paths) {
      data = mapPath(data, path, (v) => {
        if (!v.startsWith(SEALED_PREFIX)) return v;
        if (!key) {
          erased = true;
          return '';
        }
        return open(key, v, documentId);
      });
    }
    if (erased) data = { ...(data as Record<string, unknown>), erased: true };
    return upcast({ ...e, data });
  }

  private async openAll(events: RecordedEvent[]): Promise<RecordedEvent[]> {
    // Most events seal nothing: upcast those in place, and wait only for the others' keys.
    const out = new Array<RecordedEvent>(events.length);
    const sealed: Promise<void>[] = [];
    events.forEach((e, i) => {
      if (encryptedPathsOf(e.type).length === 0) out[i] = upcast(e);
      else sealed.push(this.openEvent(e).then((opened) => void (out[i] = opened)));
    });
    if (sealed.length > 0) await Promise.all(sealed);
    return out;
  }

  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    const sealed = await Promise.all(events.map((e) => this.sealEvent(e)));
    return this.inner.append(streamId, sealed, expected);
  }

  async readStream(streamId: string, fromRevision?: number): Promise<RecordedEvent[]> {
    return this.openAll(await this.inner.readStream(streamId, fromRevision));
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

  /** The data keys (the erasure service destroys them). */
  get keyStore(): KeyStore {
    return this.keys;
  }

  /** The wrapped store (tools that must see the stored bytes, such as verify). */
  get wrapped(): EventStore {
    return this.inner;
  }
}
