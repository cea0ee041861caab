import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { SqliteKeyStore } from '../../src/adapters/sqlite/sqliteKeyStore';
import { EncryptingEventStore, open, seal, SEALED_PREFIX } from '../../src/adapters/encryption/encryptingEventStore';
import { NewEvent, RecordedEvent } from '../../src/domain/event';

const meta = { actorId: 'u1', authMethod: 'session' as const, correlationId: 'c', occurredAt: '2024-01-01T00:00:00.000Z', schemaVersion: 1 };
const ev = (type: string, data: unknown): NewEvent => ({ id: randomUUID(), type, data, metadata: meta });

describe('seal and open', () => {
  const key = randomBytes(32);
  const ivOf = (sealed: string) => Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64').subarray(0, 12).toString('hex');

  it('round-trips text, with the document id as text or as bytes, and refuses another id or key', () => {
    for (const text of ['', 'a', 'purple elephants', 'é'.repeat(5000)]) {
      expect(open(key, seal(key, text, 'doc-1'), 'doc-1')).toBe(text);
      expect(open(key, seal(key, text, Buffer.from('doc-1')), 'doc-1')).toBe(text);
      expect(open(key, seal(key, text, 'doc-1'), Buffer.from('doc-1'))).toBe(text);
    }
    expect(() => open(key, seal(key, 'secret', 'doc-1'), 'doc-2')).toThrow();
    expect(() => open(key, seal(key, 'secret', 'doc-1'), Buffer.from('doc-2'))).toThrow();
    expect(() => open(randomBytes(32), seal(key, 'secret', 'doc-1'), 'doc-1')).toThrow();
  });

  it('never uses an IV twice, across the blocks it draws them in', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) seen.add(ivOf(seal(key, 'same text', 'doc-1')));
    expect(seen.size).toBe(2000);
  });
});

describe('EncryptingEventStore', () => {
  let dir: string;
  let inner: SqliteEventStore;
  let keys: SqliteKeyStore;
  let store: EncryptingEventStore;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-enc-'));
    inner = new SqliteEventStore(path.join(dir, 'events.db'));
    keys = new SqliteKeyStore(path.join(dir, 'keys.db'));
    store = new EncryptingEventStore(inner, keys);
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const docId = 'd0c00000-0000-4000-8000-000000000001';
  const phrase = 'purple elephants juggle quietly';
  const textEvents = () => [
    ev('DocumentTextExtracted', { documentId: docId, workspaceId: 'w', sections: [{ heading: 'H', text: phrase }, { text: 'second part' }] }),
    ev('DocumentChunked', { documentId: docId, workspaceId: 'w', chunks: [{ index: 0, content: phrase, tokenCount: 4 }] }),
    ev('DocumentContentUpdated', { documentId: docId, workspaceId: 'w', content: `# ${phrase}` }),
  ];

  it('stores document text sealed and reads it back in clear', async () => {
    await store.append(`document-${docId}`, textEvents(), 'no_stream');
    const raw = await inner.readStream(`document-${docId}`);
    const rawJson = JSON.stringify(raw.map((e) => e.data));
    expect(rawJson).not.toContain(phrase);
    expect((raw[1].data as { chunks: { content: string }[] }).chunks[0].content.startsWith(SEALED_PREFIX)).toBe(true);
    // Fields that are not text stay in clear.
    expect((raw[0].data as { sections: { heading: string }[] }).sections[0].heading).toBe('H');

    const read = await store.readStream(`document-${docId}`);
    expect((read[0].data as { sections: { text: string }[] }).sections.map((s) => s.text)).toEqual([phrase, 'second part']);
    expect((read[1].data as { chunks: { content: string }[] }).chunks[0].content).toBe(phrase);
    expect((read[2].data as { content: string }).content).toBe(`# ${phrase}`);
    expect((read[2].data as { erased?: boolean }).erased).toBeUndefined();
    const all = await store.readAll(0, 10);
    expect((all[1].data as { chunks: { content: string }[] }).chunks[0].content).toBe(phrase);
  });

  it('after the key is destroyed, every reader sees empty text and erased: true', async () => {
    await store.append(`document-${docId}`, textEvents(), 'no_stream');
    const key = await keys.get(docId);
    expect(key).not.toBeNull();
    await keys.destroy(docId);

    const read = await store.readStream(`document-${docId}`);
    expect(read.map((e) => (e.data as { erased?: boolean }).erased)).toEqual([true, true, true]);
    expect((read[0].data as { sections: { text: string; heading?: string }[] }).sections).toEqual([{ heading: 'H', text: '' }, { text: '' }]);
    expect((read[1].data as { chunks: { content: string; tokenCount: number }[] }).chunks).toEqual([{ index: 0, content: '', tokenCount: 4 }]);
    expect((read[2].data as { content: string }).content).toBe('');

    const seen: RecordedEvent[] = [];
    const sub = store.subscribe(0, async (batch) => {
      seen.push(...batch);
    });
    while (seen.length < 3) await new Promise((r) => setTimeout(r, 10));
    await sub.stop();
    expect(JSON.stringify(seen.map((e) => e.data))).not.toContain(phrase);

    // The key's bytes are gone from the key store's file.
    await keys.close();
    const bytes = fs.readFileSync(path.join(dir, 'keys.db'));
    expect(bytes.includes(key as Buffer)).toBe(false);
    keys = new SqliteKeyStore(path.join(dir, 'keys.db'));
    store = new EncryptingEventStore(inner, keys);
    expect(await keys.isDestroyed(docId)).toBe(true);
  });

  it('text kept in memory from the append or a first reader is the text in the log, and is never served once the key is gone', async () => {
    await store.append(`document-${docId}`, textEvents(), 'no_stream');
    const fresh = new EncryptingEventStore(inner, keys); // nothing in memory: decrypts from the log
    const fromLog = await fresh.readAll(0, 10);
    expect(await store.readAll(0, 10)).toEqual(fromLog);
    expect(await fresh.readAll(0, 10)).toEqual(fromLog); // now from its memory
    // Destroyed through the store's key store (the erasure service's way): dropped and erased.
    await store.keyStore.destroy(docId);
    for (const s of [store, fresh]) {
      const after = await s.readAll(0, 10);
      expect(JSON.stringify(after)).not.toContain(phrase);
      expect(after.every((e) => (e.data as { erased?: boolean }).erased === true)).toBe(true);
    }
  });

  it('more text than the memory keeps: older events are decrypted from the log again', async () => {
    const big = 'x'.repeat(400_000);
    const n = 30; // 12 M characters, over PLAINTEXT_CACHE_CHARS
    for (let i = 0; i < n; i++) {
      await store.append(`document-${docId}`, [ev('DocumentContentUpdated', { documentId: docId, workspaceId: 'w', content: `${i} ${big}` })], i === 0 ? 'no_stream' : 'any');
    }
    const all = await store.readAll(0, n);
    expect(all.map((e) => (e.data as { content: string }).content.split(' ')[0])).toEqual(Array.from({ length: n }, (_, i) => String(i)));
    expect(all.every((e) => (e.data as { content: string }).content.endsWith(big))).toBe(true);
  });

  it('text arriving after the erasure is never stored, and no new key is made', async () => {
    await keys.destroy(docId);
    await store.append(`document-${docId}`, [textEvents()[1]], 'any');
    const raw = await inner.readStream(`document-${docId}`);
    expect(JSON.stringify(raw[0].data)).not.toContain(phrase);
    expect(raw[0].data).toMatchObject({ erased: true, chunks: [{ content: '' }] });
    expect(await keys.get(docId)).toBeNull();
  });

  it('each document has its own key; destroying one leaves the others readable', async () => {
    const other = 'd0c00000-0000-4000-8000-000000000002';
    await store.append(`document-${docId}`, [textEvents()[2]], 'no_stream');
    await store.append(`document-${other}`, [ev('DocumentContentUpdated', { documentId: other, workspaceId: 'w', content: 'kept text' })], 'no_stream');
    expect((await keys.get(docId))?.equals((await keys.get(other)) as Buffer)).toBe(false);
    await keys.destroy(docId);
    expect((await store.readStream(`document-${other}`))[0].data).toMatchObject({ content: 'kept text' });
    expect((await store.readStream(`document-${docId}`))[0].data).toMatchObject({ content: '', erased: true });
  });

  it('leaves events without document text untouched', async () => {
    await store.append('workspace-w', [ev('TagCreated', { workspaceId: 'w', tagId: 't', name: 'n', color: '#000000' })], 'no_stream');
    const raw = await inner.readStream('workspace-w');
    expect(raw[0].data).toEqual({ workspaceId: 'w', tagId: 't', name: 'n', color: '#000000' });
    expect(await keys.get('w')).toBeNull();
  });
});
