import { createHash } from 'node:crypto';
import {
  ANY,
  AppendExpectedRevision,
  CurrentRevision,
  JSONEventData,
  JSONType,
  NO_STREAM,
  Position,
  ReadPosition,
  START,
  STREAM_EXISTS,
} from '@eventstore/db-client';
import { EventMetadata, NewEvent, RecordedEvent } from '../../domain/event';
import { ExpectedRevision } from '../../ports/eventStore';

/**
 * Pure conversions between the EventStore port and EventStoreDB / KurrentDB.
 *
 * Positions: EventStoreDB orders `$all` by a transaction-log Position {commit, prepare}.
 * Every event appended over gRPC is its own implicit transaction record, so its commit
 * position is unique and grows with the log, but it is a byte offset, not a dense 1..n
 * counter. The port's `position` is that commit position as a JS number (exact below
 * 2^53, i.e. 8 PiB of log). The port only promises "strictly increasing", and callers
 * treat positions as opaque checkpoints, so gaps are fine. To resume after position p we
 * read `$all` from {commit: p, prepare: p} and drop the event at p itself.
 *
 * Revisions: the port's 0-based stream revision is EventStoreDB's stream revision
 * (bigint); 'no_stream' and 'any' map to NO_STREAM and ANY.
 *
 * Event ids: EventStoreDB requires UUIDs and uses them for idempotent appends. Our ids
 * are UUIDs when produced by command handlers; any other id is mapped to a stable
 * name-based UUID, and the original id travels in the metadata (`kbEventId`).
 */

/** Metadata as stored in EventStoreDB: ours, plus the original id and the correlation id EventStoreDB's projections understand. */
export type StoredMetadata = EventMetadata & { kbEventId: string; $correlationId: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export function toEsdbExpectedRevision(expected: ExpectedRevision): AppendExpectedRevision {
  if (expected === 'any') return ANY;
  if (expected === 'no_stream') return NO_STREAM;
  if (!Number.isSafeInteger(expected) || expected < 0) throw new RangeError(`invalid expected revision ${expected}`);
  return BigInt(expected);
}

/** EventStoreDB's view of the expected revision, back in the port's terms (for error reports). */
export function fromEsdbExpectedRevision(expected: AppendExpectedRevision): ExpectedRevision {
  if (expected === ANY || expected === STREAM_EXISTS) return 'any';
  if (expected === NO_STREAM) return 'no_stream';
  return bigintToNumber(expected);
}

export function fromEsdbCurrentRevision(current: CurrentRevision): number | 'no_stream' {
  return current === NO_STREAM ? 'no_stream' : bigintToNumber(current);
}

export function bigintToNumber(value: bigint): number {
  if (value < 0n || value > MAX_SAFE) throw new RangeError(`value ${value} does not fit a safe integer`);
  return Number(value);
}

/** The port's position of an event: its commit position. */
export function positionToNumber(position: Position): number {
  return bigintToNumber(position.commit);
}

/** Where to start reading `$all` to see events after `afterPosition` (the event at it is read again and must be skipped). */
export function readPositionAfter(afterPosition: number): ReadPosition {
  if (!Number.isSafeInteger(afterPosition) || afterPosition < 0) throw new RangeError(`invalid position ${afterPosition}`);
  if (afterPosition === 0) return START;
  const p = BigInt(afterPosition);
  return { commit: p, prepare: p };
}

/** A stable UUID for an event id: itself when it is one, else a name-based UUID (v5 layout, SHA-256). */
export function esdbEventId(id: string): string {
  if (UUID.test(id)) return id.toLowerCase();
  const h = createHash('sha256').update('kb-event-id:').update(id).digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** Our stream id inside EventStoreDB; a prefix namespaces one deployment (or one test run) on a shared server. */
export function toStreamName(prefix: string, streamId: string): string {
  if (streamId.startsWith('$')) throw new Error(`stream id ${streamId} would be an EventStoreDB system stream`);
  return prefix ? `${prefix}${streamId}` : streamId;
}

/** Our stream id for an EventStoreDB stream name, or null when the stream is not ours. */
export function fromStreamName(prefix: string, streamName: string): string | null {
  if (streamName.startsWith('$')) return null;
  if (!prefix) return streamName;
  return streamName.startsWith(prefix) ? streamName.slice(prefix.length) : null;
}

function isJsonType(value: unknown): value is JSONType {
  return typeof value === 'string' || Array.isArray(value) || (typeof value === 'object' && value !== null);
}

export function toEventData(event: NewEvent): JSONEventData {
  if (!isJsonType(event.data)) throw new TypeError(`event ${event.id}: data must be a JSON object, array or string`);
  const metadata: StoredMetadata = { ...event.metadata, kbEventId: event.id, $correlationId: event.metadata.correlationId };
  return {
    id: esdbEventId(event.id),
    contentType: 'application/json',
    type: event.type,
    data: event.data,
    metadata: { ...metadata },
  };
}

/** The shape of a recorded EventStoreDB event this mapping needs (a subset of the client's RecordedEvent). */
export interface EsdbRecorded {
  streamId: string;
  id: string;
  revision: bigint;
  type: string;
  isJson: boolean;
  data: unknown;
  metadata: unknown;
  position?: Position;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

/**
 * Our RecordedEvent for an EventStoreDB event, or null for events that are not ours:
 * system events (`$`-prefixed types or streams), other namespaces, binary events.
 * `position` must be given for events read from `$all`; for stream reads it comes with
 * the event on servers ≥ 22.6.
 */
export function fromEsdbEvent(prefix: string, e: EsdbRecorded, position: Position | undefined = e.position): RecordedEvent | null {
  if (e.type.startsWith('$')) return null;
  const streamId = fromStreamName(prefix, e.streamId);
  if (streamId === null || !e.isJson) return null;
  if (!position) throw new Error(`event ${e.id} in ${e.streamId} has no log position (EventStoreDB ≥ 22.6 is required)`);
  const stored = isRecord(e.metadata) ? e.metadata : {};
  const { kbEventId, $correlationId: _correlation, ...metadata } = stored;
  return {
    id: typeof kbEventId === 'string' ? kbEventId : e.id,
    streamId,
    revision: bigintToNumber(e.revision),
    position: positionToNumber(position),
    type: e.type,
    data: e.data,
    metadata: metadata as unknown as EventMetadata,
  };
}
