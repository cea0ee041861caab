import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { SqliteKeyStore } from '../../src/adapters/sqlite/sqliteKeyStore';
import { EncryptingEventStore } from '../../src/adapters/encryption/encryptingEventStore';
import { AppContext } from '../../src/app/context';
import { NewEvent, RecordedEvent } from '../../src/domain/event';
import { documentStream, encodeVector } from '../../src/domain/document/events';
import { instructionSetStream } from '../../src/domain/instructionSet/events';
import { EventStore } from '../../src/ports/eventStore';
import { documentAsOf, instructionSetAsOf } from '../../src/audit/timeTravel';
import { documentTextIn } from '../../queries/document/documentText';

/**
 * A document's stream holds its text, its chunks and their vectors: megabytes for a large
 * file (a 5 MB text: 9 MB of chunks, 3.6 MB of vectors, 7 MB of text). The reads of its past
 * (metadata as of a time, a set as of a time) and of its text read, decrypt and parse only the
 * event types they use: reading everything made one request of a 5 MB document cost 0.58 s of
 * CPU on the event loop, and eight at once held /healthz for 0.7 s (hostile look, issue 13).
 */
describe('reads of a document past and text: only the event types they use', () => {
  let dir: string;
  let inner: SqliteEventStore;
  let keys: SqliteKeyStore;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-past-'));
    inner = new SqliteEventStore(path.join(dir, 'events.db'));
    keys = new SqliteKeyStore(path.join(dir, 'keys.db'));
  });
  afterEach(async () => {
    await inner.close();
    await keys.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const meta = { actorId: 'u1', authMethod: 'session' as const, correlationId: 'c', occurredAt: '2025-01-01T00:00:00.000Z', schemaVersion: 1 };
  const ev = (type: string, data: Record<string, unknown>): NewEvent => ({ id: randomUUID(), type, data, metadata: meta });

  /** The event store, remembering the type of every event a stream read gave back. */
  function spying(store: EventStore): { store: EventStore; seen: string[] } {
    const seen: string[] = [];
    const wrapped: EventStore = {
      append: (s, e, x) => store.append(s, e, x),
      readStream: async (s, r, types) => {
        const read = await store.readStream(s, r, types);
        seen.push(...read.map((e: RecordedEvent) => e.type));
        return read;
      },
      readAll: (a, m) => store.readAll(a, m),
      headPosition: () => store.headPosition(),
      subscribe: (a, h, o) => store.subscribe(a, h, o),
      close: () => store.close(),
    };
    return { store: wrapped, seen };
  }

  it('the text, the metadata as of a time and a set as of a time leave the chunks and vectors unread; their answers are whole', async () => {
    const workspaceId = randomUUID();
    const documentId = randomUUID();
    const setId = randomUUID();
    // The text is sealed (as in the service); the spy sees what the log gave to be opened.
    const { store: spied, seen } = spying(inner);
    const events = new EncryptingEventStore(spied, keys);
    const ids = { documentId, workspaceId, processingId: 'p1' };
    await events.append(
      documentStream(documentId),
      [
        ev('DocumentUploaded', { documentId, workspaceId, blob: { sha256: 'ab'.repeat(32), size: 11 }, kind: 'txt', mimeType: 'text/plain', size: 11, filename: 'a.txt', title: 'A', purpose: 'KNOWLEDGE', tags: [], uploadedBy: 'u1', uploadedAt: meta.occurredAt }),
        ev('DocumentProcessingStarted', { ...ids, reason: 'UPLOADED', startedAt: meta.occurredAt }),
        ev('DocumentTextExtracted', { ...ids, sections: [{ text: 'hello world' }], tokenCount: 2, sizeBytes: 11 }),
        ev('DocumentChunked', { ...ids, chunks: [{ index: 0, content: 'hello world', tokenCount: 2 }] }),
        ev('ChunksEmbedded', { ...ids, modelId: 'm', dimensions: 2, vectors: [{ index: 0, vector: encodeVector(new Float32Array([1, 2])) }] }),
        ev('DocumentVerified', { ...ids, chunkCount: 1, tokenCount: 2 }),
      ],
      'no_stream',
    );
    await events.append(
      instructionSetStream(setId),
      [
        ev('InstructionSetCreated', { setId, workspaceId, name: 'S', description: null, isPublic: false, createdAt: meta.occurredAt }),
        ev('SetDocumentAdded', { setId, workspaceId, documentId, title: 'A', sizeBytes: 11, purpose: 'KNOWLEDGE', updatedAt: meta.occurredAt }),
      ],
      'no_stream',
    );
    seen.length = 0;
    const ctx = {
      eventStore: events,
      scratchReadStore: () => new SqliteReadStore(':memory:'),
      runner: { waitFor: async () => true },
      config: { readYourWritesMs: 10, baseUrl: 'http://kb.test', appUrl: 'http://kb.test' },
    } as unknown as AppContext;
    const later = new Date('2026-01-01T00:00:00.000Z');

    const text = await documentTextIn(ctx, workspaceId, documentId);
    expect(text).toMatchObject({ documentId, processingId: 'p1', tokenCount: 2, sizeBytes: 11, text: 'hello world' });
    const past = await documentAsOf(ctx, documentId, later);
    expect(past).toMatchObject({ id: documentId, processingStatus: 'VERIFIED', chunkCount: 1, tokenCount: 2, sizeBytes: 11 });
    const set = await instructionSetAsOf(ctx, setId, later);
    expect(set?.set).toMatchObject({ id: setId, documentCount: 1, unavailableDocuments: [] });

    expect(seen).toContain('DocumentVerified');
    expect(seen.filter((t) => t === 'DocumentChunked' || t === 'ChunksEmbedded')).toEqual([]);
  });
});
