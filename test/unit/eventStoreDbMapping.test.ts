import { ANY, NO_STREAM, START, STREAM_EXISTS } from '@eventstore/db-client';
import {
  EsdbRecorded,
  bigintToNumber,
  esdbEventId,
  fromEsdbCurrentRevision,
  fromEsdbEvent,
  fromEsdbExpectedRevision,
  fromStreamName,
  positionToNumber,
  readPositionAfter,
  toEsdbExpectedRevision,
  toEventData,
  toStreamName,
} from '../../src/adapters/eventstoredb/eventStoreDbMapping';
import { NewEvent } from '../../src/domain/event';

const metadata = { actorId: 'u1', authMethod: 'session' as const, correlationId: 'corr-1', occurredAt: '2024-01-01T00:00:00.000Z', schemaVersion: 2, workspaceId: 'w1' };

describe('expected revisions', () => {
  it('maps the port to EventStoreDB', () => {
    expect(toEsdbExpectedRevision('no_stream')).toBe(NO_STREAM);
    expect(toEsdbExpectedRevision('any')).toBe(ANY);
    expect(toEsdbExpectedRevision(0)).toBe(0n);
    expect(toEsdbExpectedRevision(41)).toBe(41n);
    expect(() => toEsdbExpectedRevision(-1)).toThrow(RangeError);
    expect(() => toEsdbExpectedRevision(1.5)).toThrow(RangeError);
  });

  it('maps EventStoreDB back to the port', () => {
    expect(fromEsdbExpectedRevision(NO_STREAM)).toBe('no_stream');
    expect(fromEsdbExpectedRevision(ANY)).toBe('any');
    expect(fromEsdbExpectedRevision(STREAM_EXISTS)).toBe('any');
    expect(fromEsdbExpectedRevision(7n)).toBe(7);
    expect(fromEsdbCurrentRevision(NO_STREAM)).toBe('no_stream');
    expect(fromEsdbCurrentRevision(3n)).toBe(3);
  });
});

describe('positions', () => {
  it('uses the commit position as the number, refusing values past 2^53', () => {
    expect(positionToNumber({ commit: 1234n, prepare: 1234n })).toBe(1234);
    expect(bigintToNumber(BigInt(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
    expect(() => bigintToNumber(BigInt(Number.MAX_SAFE_INTEGER) + 1n)).toThrow(RangeError);
    // What old servers report for a stream read: "no position".
    expect(() => positionToNumber({ commit: 18446744073709551615n, prepare: 18446744073709551615n })).toThrow(RangeError);
  });

  it('resumes from the start for 0, else from the event at the position', () => {
    expect(readPositionAfter(0)).toBe(START);
    expect(readPositionAfter(5000)).toEqual({ commit: 5000n, prepare: 5000n });
    expect(() => readPositionAfter(-1)).toThrow(RangeError);
  });
});

describe('event ids', () => {
  it('keeps UUIDs (lower-cased) and maps other ids to a stable UUID', () => {
    expect(esdbEventId('0F8FAD5B-D9CB-469F-A165-70867728950E')).toBe('0f8fad5b-d9cb-469f-a165-70867728950e');
    const a = esdbEventId('doc-1:chunk-3');
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(esdbEventId('doc-1:chunk-3')).toBe(a);
    expect(esdbEventId('doc-1:chunk-4')).not.toBe(a);
  });
});

describe('stream names', () => {
  it('prefixes and strips, and rejects system streams', () => {
    expect(toStreamName('', 'document-1')).toBe('document-1');
    expect(toStreamName('kb-', 'document-1')).toBe('kb-document-1');
    expect(() => toStreamName('', '$all')).toThrow();
    expect(fromStreamName('kb-', 'kb-document-1')).toBe('document-1');
    expect(fromStreamName('kb-', 'other-document-1')).toBeNull();
    expect(fromStreamName('', '$stats-127.0.0.1:2113')).toBeNull();
    expect(fromStreamName('', 'document-1')).toBe('document-1');
  });
});

describe('events', () => {
  const event: NewEvent = { id: 'not-a-uuid', type: 'DocumentUploaded', data: { title: 'T' }, metadata };

  it('writes JSON event data with the original id and correlation id in the metadata', () => {
    const d = toEventData(event);
    expect(d.contentType).toBe('application/json');
    expect(d.id).toBe(esdbEventId('not-a-uuid'));
    expect(d.type).toBe('DocumentUploaded');
    expect(d.data).toEqual({ title: 'T' });
    expect(d.metadata).toEqual({ ...metadata, kbEventId: 'not-a-uuid', $correlationId: 'corr-1' });
    expect(() => toEventData({ ...event, data: 42 })).toThrow(TypeError);
  });

  it('reads an event back as the port recorded it', () => {
    const d = toEventData(event);
    const stored: EsdbRecorded = {
      streamId: 'kb-document-1',
      id: d.id,
      revision: 4n,
      type: d.type,
      isJson: true,
      data: d.data,
      metadata: d.metadata,
      position: { commit: 9000n, prepare: 9000n },
    };
    expect(fromEsdbEvent('kb-', stored)).toEqual({
      id: 'not-a-uuid',
      streamId: 'document-1',
      revision: 4,
      position: 9000,
      type: 'DocumentUploaded',
      data: { title: 'T' },
      metadata,
    });
  });

  it('skips system events, other namespaces and binary events, and needs a position', () => {
    const base: EsdbRecorded = { streamId: 'document-1', id: esdbEventId('x'), revision: 0n, type: 'T', isJson: true, data: {}, metadata: {}, position: { commit: 1n, prepare: 1n } };
    expect(fromEsdbEvent('', { ...base, type: '$metadata' })).toBeNull();
    expect(fromEsdbEvent('', { ...base, streamId: '$settings' })).toBeNull();
    expect(fromEsdbEvent('kb-', base)).toBeNull();
    expect(fromEsdbEvent('', { ...base, isJson: false })).toBeNull();
    expect(() => fromEsdbEvent('', { ...base, position: undefined })).toThrow(/position/);
    // An event written by another tool has no kbEventId: its own id is used.
    expect(fromEsdbEvent('', base)?.id).toBe(esdbEventId('x'));
  });
});
