import { NewEvent, RecordedEvent } from '../domain/event';

/** `no_stream`: the stream must not exist; `any`: no check; a number: the revision of the stream's last event. */
export type ExpectedRevision = 'no_stream' | 'any' | number;

export interface AppendResult {
  /** Revision of the last event now in the stream. */
  nextRevision: number;
  /** Global position of the last event appended (or already present, for a duplicate id). */
  position: number;
}

export class WrongExpectedRevisionError extends Error {
  readonly code = 'WRONG_EXPECTED_REVISION';
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    readonly actual: number | 'no_stream',
  ) {
    super(`stream ${streamId}: expected revision ${String(expected)}, actual ${String(actual)}`);
  }
}

export interface Subscription {
  /** Stop delivering; resolves once the handler is no longer running. */
  stop(): Promise<void>;
}

/** Handler of a batch of events in log order; the subscription waits for it before the next batch. */
export type EventBatchHandler = (events: RecordedEvent[]) => Promise<void>;

/**
 * The append-only event log. Streams hold one aggregate each; the whole log has a
 * global order. An append that resolved is durable.
 */
export interface EventStore {
  append(streamId: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult>;
  /**
   * Events of one stream in revision order; empty when the stream does not exist. With
   * `types`, only the events of those types: the others are neither returned nor decoded (a
   * document's stream holds its text, chunks and vectors, megabytes a reader of its status
   * or metadata has no use for).
   */
  readStream(streamId: string, fromRevision?: number, types?: ReadonlySet<string>): Promise<RecordedEvent[]>;
  /** Events of the whole log with position > `afterPosition`, at most `maxCount`. */
  readAll(afterPosition: number, maxCount: number): Promise<RecordedEvent[]>;
  /** Global position of the last event in the log (0 when empty). */
  headPosition(): Promise<number>;
  /** Catch up from `afterPosition`, then deliver new events as they are appended. */
  subscribe(afterPosition: number, handler: EventBatchHandler, onError?: (err: unknown) => void): Subscription;
  close(): Promise<void>;
}

export const EVENT_STORE = Symbol('EVENT_STORE');
