import { Message } from 'kafkajs';
import { KafkaEventFeed, feedBatches } from '../../src/adapters/kafka/kafkaEventFeed';
import { assertEventSizes, handleCommand, systemContext, toNewEvents } from '../../src/core/commandHandler';
import { documentDecider } from '../../src/domain/document/decider';
import { chunkBatches, joinSections, splitText, textExtractedParts, vectorBatches } from '../../src/domain/document/eventParts';
import { DocumentEvent, encodeVector, ExtractedSectionData } from '../../src/domain/document/events';
import { DomainError } from '../../src/domain/errors';
import { RecordedEvent } from '../../src/domain/event';
import { EVENT_PAYLOAD_BUDGET, eventBytes, jsonBytes, MAX_EVENT_BYTES } from '../../src/domain/eventSize';

const ids = { documentId: '00000000-0000-4000-8000-000000000001', workspaceId: '00000000-0000-4000-8000-000000000002' };
const ctx = systemContext(new Date('2025-01-01T00:00:00.000Z'));

describe('the event-size bound', () => {
  it('splitText cuts by JSON bytes (escapes, multi-byte characters, surrogate pairs) and joins back exactly', () => {
    const text = `${'a "quoted" line\\ with é and 😀 '.repeat(20_000)}\u0001end`;
    const pieces = splitText(text, 4096);
    expect(pieces.join('')).toBe(text);
    expect(pieces.length).toBeGreaterThan(100);
    for (const p of pieces) expect(jsonBytes(p)).toBeLessThanOrEqual(4096);
    // Never a lone surrogate at a cut.
    for (const p of pieces) expect(/[\ud800-\udbff]$/.test(p)).toBe(false);
    expect(splitText('', 10)).toEqual(['']);
    expect(splitText('short', 100)).toEqual(['short']);
  });

  it('text parts: a long section is cut into continued pieces, every part under the budget, joined back to the one-event text', () => {
    const sections: ExtractedSectionData[] = [
      { text: 'Intro paragraph.', page: 1 },
      { text: 'word '.repeat(300_000).trim(), page: 2, section: 'Long' },
      { text: 'Last words.', page: 3 },
    ];
    const parts = textExtractedParts(sections);
    expect(parts.length).toBeGreaterThan(7);
    for (const p of parts) expect(jsonBytes(p)).toBeLessThanOrEqual(EVENT_PAYLOAD_BUDGET);
    const flat = parts.flat();
    expect(joinSections(flat)).toBe(sections.map((s) => s.text).join('\n\n'));
    expect(flat.filter((s) => s.section === 'Long').every((s, i) => (i === 0 ? s.continued === undefined : s.continued === true))).toBe(true);
    // A small document stays one part, unchanged.
    expect(textExtractedParts(sections.slice(0, 1))).toEqual([sections.slice(0, 1)]);
  });

  it('chunk and vector batches stay under the budget (vectors by dimensions)', () => {
    const vectors = Array.from({ length: 64 }, (_, index) => ({ index, vector: encodeVector(new Float32Array(3072).fill(0.5)) }));
    const batches = vectorBatches(vectors);
    expect(batches.flat()).toEqual(vectors);
    expect(batches.length).toBe(Math.ceil(64 / Math.floor(EVENT_PAYLOAD_BUDGET / (jsonBytes(vectors[0]) + 1))));
    for (const b of batches) expect(jsonBytes(b)).toBeLessThanOrEqual(EVENT_PAYLOAD_BUDGET);
    const chunks = Array.from({ length: 600 }, (_, index) => ({ index, content: 'x'.repeat(2000), tokenCount: 400 }));
    const cb = chunkBatches(chunks, 256);
    expect(cb.flat()).toEqual(chunks);
    for (const b of cb) expect(jsonBytes(b)).toBeLessThanOrEqual(EVENT_PAYLOAD_BUDGET);
    expect(chunkBatches(chunks.slice(0, 300).map((c) => ({ ...c, content: 'x' })), 256).map((b) => b.length)).toEqual([256, 44]);
  });

  it('the decider takes text parts in order and is extracted only after the last', () => {
    const started: DocumentEvent[] = [
      { type: 'DocumentUploaded', data: { ...ids, blob: { sha256: 'ab'.repeat(32), size: 1 }, kind: 'txt', mimeType: 'text/plain', size: 1, filename: 'a.txt', title: 'a', purpose: 'KNOWLEDGE', tags: [], uploadedBy: 'u', uploadedAt: ctx.now.toISOString() } },
      { type: 'DocumentProcessingStarted', data: { ...ids, processingId: 'p1', reason: 'UPLOADED', startedAt: ctx.now.toISOString() } },
    ];
    let s = started.reduce(documentDecider.evolve, documentDecider.initialState());
    const part = (n: number) => ({ type: 'RecordTextExtracted' as const, processingId: 'p1', sections: [{ text: `t${n}` }], tokenCount: 3, sizeBytes: 10, part: n, parts: 3 });
    expect(() => documentDecider.decide(part(1), s)).toThrow(DomainError);
    for (const n of [0, 1]) {
      const [e] = documentDecider.decide(part(n), s);
      expect(e.data).toMatchObject({ part: n, parts: 3, sizeBytes: 10, tokenCount: 3 });
      s = documentDecider.evolve(s, e);
      expect(s.run.extracted).toBe(false);
      expect(() => documentDecider.decide({ type: 'RecordChunks', processingId: 'p1', chunks: [{ index: 0, content: 'c', tokenCount: 1 }] }, s)).toThrow(/before extracted/);
    }
    s = documentDecider.evolve(s, documentDecider.decide(part(2), s)[0]);
    expect(s.run).toMatchObject({ extracted: true, textParts: 3 });
    expect(() => documentDecider.decide(part(2), s)).toThrow(/already extracted/);
    // One part: the event shape of before (no part fields).
    const one = started.reduce(documentDecider.evolve, documentDecider.initialState());
    expect(documentDecider.decide({ type: 'RecordTextExtracted', processingId: 'p1', sections: [{ text: 'x' }], tokenCount: 1, sizeBytes: 1 }, one)[0].data).not.toHaveProperty('part');
  });

  it('the command handler refuses an event over MAX_EVENT_BYTES with PAYLOAD_TOO_LARGE, before the store sees it', async () => {
    const big = toNewEvents([{ type: 'DocumentContentUpdated', data: { ...ids, content: 'x'.repeat(MAX_EVENT_BYTES), size: MAX_EVENT_BYTES, updatedAt: '' } }], ctx);
    expect(eventBytes(big[0])).toBeGreaterThan(MAX_EVENT_BYTES);
    expect(() => assertEventSizes(big)).toThrow(/262144-byte limit/);
    const appended: unknown[] = [];
    const store = {
      readStream: async () => [],
      append: async (...args: unknown[]) => {
        appended.push(args);
        return { nextRevision: 0, position: 1 };
      },
    } as never;
    const decider = { initialState: () => ({}), evolve: (s: object) => s, decide: () => [{ type: 'DocumentContentUpdated', data: big[0].data }] };
    const err = await handleCommand(store, 'document-x', decider, {}, ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('PAYLOAD_TOO_LARGE');
    expect(appended).toHaveLength(0);
  });
});

describe('Kafka event feed', () => {
  const event = (i: number, bytes: number): RecordedEvent => ({
    id: `e${i}`,
    type: 'DocumentChunked',
    streamId: 'document-d1',
    revision: i,
    position: i + 1,
    data: { blob: 'x'.repeat(bytes) },
    metadata: { actorId: null, authMethod: 'system', correlationId: 'c', occurredAt: '', schemaVersion: 1 },
  });

  it('sends byte-capped batches, creates kb.events at connect, bounds producer retries and reports a failed send', async () => {
    const sends: Message[][] = [];
    const created: unknown[] = [];
    const producerConfigs: unknown[] = [];
    let fail = false;
    const kafka = {
      producer: (config: unknown) => {
        producerConfigs.push(config);
        return {
          connect: async () => undefined,
          disconnect: async () => undefined,
          send: async (r: { messages: Message[] }) => {
            if (fail) throw new Error('brokers down');
            sends.push(r.messages);
            return [];
          },
        };
      },
      admin: () => ({ connect: async () => undefined, disconnect: async () => undefined, listTopics: async () => ['kb.jobs'], createTopics: async (o: unknown) => created.push(o) }),
    } as never;
    const errors: unknown[] = [];
    const feed = await new KafkaEventFeed({ brokers: [], kafka, onError: (err, info) => errors.push(info) }).connect();
    expect(created).toEqual([{ topics: [{ topic: 'kb.events', numPartitions: 6 }], waitForLeaders: true }]);
    expect(producerConfigs[0]).toMatchObject({ idempotent: true, allowAutoTopicCreation: false, retry: { retries: 5 } });
    // 500 events of 300 KiB each would be one 150 MB request; the feed sends about two per request.
    await feed.publish(Array.from({ length: 10 }, (_, i) => event(i, 200 * 1024)));
    expect(sends.flat().map((m) => m.key)).toHaveLength(10);
    expect(sends.length).toBe(5);
    for (const batch of sends) expect(batch.reduce((n, m) => n + Buffer.byteLength(m.value as string), 0)).toBeLessThanOrEqual(512 * 1024);
    fail = true;
    await expect(feed.publish([event(11, 10)])).rejects.toThrow('brokers down');
    expect(errors).toEqual([{ events: 1, bytes: expect.any(Number) }]);
    expect(feedBatches([], 10)).toEqual([]);
  });
});
