import { RecordedEvent } from '../domain/event';

/**
 * Publishes the event log to external consumers (analytics, SIEM). Delivery is at least
 * once and in log order per stream; consumers de-duplicate by event id.
 */
export interface EventFeed {
  /** Resolves once every event is durably accepted by the feed. */
  publish(events: RecordedEvent[]): Promise<void>;
  close(): Promise<void>;
}

export const EVENT_FEED = Symbol('EVENT_FEED');
