import type { Message } from 'kafkajs';
import { EventMetadata, RecordedEvent } from '../../domain/event';
import { Job } from '../../ports/jobQueue';
import { encodeJob, errorMessage } from '../jobRetry';

export const EVENTS_TOPIC = 'kb.events';
export const JOBS_TOPIC = 'kb.jobs';
export const JOBS_DLQ_TOPIC = 'kb.jobs.dlq';
export const WORKERS_GROUP = 'kb-workers';

/**
 * The JSON value of every message on `kb.events` (version 1 of this envelope). Keyed by
 * streamId, so one stream's events stay in one partition, in revision order.
 *
 * - id: event id (unique; consumers de-duplicate on it, delivery is at least once)
 * - type: event type, e.g. `DocumentUploaded`
 * - streamId, revision: the aggregate stream and the event's 0-based revision in it
 * - position: global log position (increasing; for EventStoreDB a commit position, not dense)
 * - data: the event payload, shaped by `type` at `schemaVersion`
 * - metadata: actorId, authMethod, correlationId, occurredAt, schemaVersion, workspaceId?
 * - schemaVersion: copy of metadata.schemaVersion, for routing without parsing metadata
 */
export interface EventEnvelope {
  id: string;
  type: string;
  streamId: string;
  revision: number;
  position: number;
  data: unknown;
  metadata: EventMetadata;
  schemaVersion: number;
}

export function toEnvelope(e: RecordedEvent): EventEnvelope {
  return {
    id: e.id,
    type: e.type,
    streamId: e.streamId,
    revision: e.revision,
    position: e.position,
    data: e.data,
    metadata: e.metadata,
    schemaVersion: e.metadata.schemaVersion,
  };
}

export function eventMessage(e: RecordedEvent): Message {
  return {
    key: e.streamId,
    value: JSON.stringify(toEnvelope(e)),
    headers: { 'content-type': 'application/json', 'kb-event-type': e.type, 'kb-event-id': e.id, 'kb-envelope-version': '1' },
  };
}

/**
 * A job is keyed by its group (workspace) when it has one, else by its id. Kafka's fairness is
 * per partition: one workspace's jobs share a partition, so they run one at a time and in
 * order across the whole consumer group, and cannot fill the other partitions; workspaces
 * hashed to the same partition share it first come (more partitions, less sharing).
 */
export function jobMessage(job: Job): Message {
  return { key: job.group ?? job.id, value: encodeJob(job), headers: { 'content-type': 'application/json', 'kb-job-type': job.type } };
}

/** A dead-lettered job: the job (or the raw value when it could not be decoded), why, and after how many attempts. */
export function deadLetterMessage(input: { job: Job | null; raw: string | null; error: unknown; attempts: number; sourceTopic: string; key: string | null }): Message {
  return {
    key: input.job?.id ?? input.key,
    value: JSON.stringify({ job: input.job, raw: input.job ? undefined : input.raw, error: errorMessage(input.error), attempts: input.attempts }),
    headers: {
      'content-type': 'application/json',
      'kb-dlq-source-topic': input.sourceTopic,
      'kb-dlq-attempts': String(input.attempts),
      'kb-dlq-error': errorMessage(input.error).slice(0, 1000),
    },
  };
}
