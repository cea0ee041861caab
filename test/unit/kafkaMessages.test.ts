import { deadLetterMessage, eventMessage, jobMessage, toEnvelope } from '../../src/adapters/kafka/kafkaMessages';
import { decodeJob } from '../../src/adapters/jobRetry';
import { RecordedEvent } from '../../src/domain/event';

const event: RecordedEvent = {
  id: 'e1',
  type: 'DocumentUploaded',
  streamId: 'document-d1',
  revision: 3,
  position: 120,
  data: { title: 'T' },
  metadata: { actorId: 'u1', authMethod: 'session', correlationId: 'c1', occurredAt: '2024-01-01T00:00:00.000Z', schemaVersion: 2, workspaceId: 'w1' },
  hash: 'ab'.repeat(32),
};

describe('event feed messages', () => {
  it('wraps an event in the documented envelope, without the local hash', () => {
    expect(toEnvelope(event)).toEqual({
      id: 'e1',
      type: 'DocumentUploaded',
      streamId: 'document-d1',
      revision: 3,
      position: 120,
      data: { title: 'T' },
      metadata: event.metadata,
      schemaVersion: 2,
    });
  });

  it('keys by stream id so a stream stays ordered in one partition', () => {
    const m = eventMessage(event);
    expect(m.key).toBe('document-d1');
    expect(JSON.parse(String(m.value))).toEqual(toEnvelope(event));
    expect(m.headers).toMatchObject({ 'kb-event-type': 'DocumentUploaded', 'kb-event-id': 'e1', 'kb-envelope-version': '1' });
  });
});

describe('job messages', () => {
  it('keys by job id and decodes back', () => {
    const job = { id: 'j1', type: 'ProcessDocument', payload: { documentId: 'd1' } };
    const m = jobMessage(job);
    expect(m.key).toBe('j1');
    expect(decodeJob(String(m.value))).toEqual(job);
  });

  it('keys a job with a group (its workspace) by the group: one workspace, one partition', () => {
    const job = { id: 'j2', type: 'process-document', payload: { documentId: 'd2' }, group: 'ws-1' };
    const m = jobMessage(job);
    expect(m.key).toBe('ws-1');
    expect(decodeJob(String(m.value))).toEqual(job);
  });

  it('dead-letters a job with its error and attempts, or the raw value when undecodable', () => {
    const job = { id: 'j1', type: 'T', payload: {} };
    const m = deadLetterMessage({ job, raw: null, key: 'j1', error: new Error('boom'), attempts: 5, sourceTopic: 'kb.jobs' });
    expect(m.key).toBe('j1');
    expect(JSON.parse(String(m.value))).toEqual({ job, error: 'boom', attempts: 5 });
    expect(m.headers).toMatchObject({ 'kb-dlq-source-topic': 'kb.jobs', 'kb-dlq-attempts': '5', 'kb-dlq-error': 'boom' });
    const raw = deadLetterMessage({ job: null, raw: '{oops', key: 'k', error: 'bad', attempts: 0, sourceTopic: 'kb.jobs' });
    expect(raw.key).toBe('k');
    expect(JSON.parse(String(raw.value))).toEqual({ job: null, raw: '{oops', error: 'bad', attempts: 0 });
  });
});
