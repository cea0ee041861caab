import { Admin, Kafka, Message, Producer } from 'kafkajs';
import { RecordedEvent } from '../../domain/event';
import { EventFeed } from '../../ports/eventFeed';
import { EVENTS_TOPIC, eventMessage } from './kafkaMessages';

export interface KafkaEventFeedOptions {
  brokers: string[];
  clientId?: string;
  topic?: string;
  /** Partitions of `kb.events` when this feed creates it (default 6). */
  numPartitions?: number;
  /** Bytes of message values (and keys) per send (default 512 KiB; brokers accept about 1 MB per batch by default). */
  maxBatchBytes?: number;
  /** Where a failed send is reported before it is thrown to the caller (which retries the batch). */
  onError?: (err: unknown, info: { events: number; bytes: number }) => void;
  /** The client to use (tests hand in a recorder); built from `brokers` otherwise. */
  kafka?: Pick<Kafka, 'producer' | 'admin'>;
}

export const DEFAULT_FEED_BATCH_BYTES = 512 * 1024;

/** Bounded retries of one send (kafkajs' default retries for about a minute per request and again per restart): a send fails instead of hanging while brokers are down. */
export const FEED_PRODUCER_RETRY = { retries: 5, initialRetryTime: 300, maxRetryTime: 10_000 };

const messageBytes = (m: Message): number =>
  (m.value === null ? 0 : Buffer.byteLength(m.value as string | Buffer)) + (m.key === null || m.key === undefined ? 0 : Buffer.byteLength(m.key as string | Buffer));

/**
 * Messages in consecutive sends of at most `maxBytes` each (a message larger than that alone
 * goes in a send of its own: events are bounded by MAX_EVENT_BYTES, so it still fits a broker's
 * default limit). kafkajs does not split a send, and a broker refuses the whole batch with
 * MESSAGE_TOO_LARGE, which no retry cures.
 */
export function feedBatches(messages: Message[], maxBytes: number): Message[][] {
  const out: Message[][] = [];
  let current: Message[] = [];
  let bytes = 0;
  for (const m of messages) {
    const size = messageBytes(m);
    if (current.length > 0 && bytes + size > maxBytes) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(m);
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/**
 * EventFeed on Kafka: an idempotent producer (acks=all, one request in flight, so retries
 * neither duplicate nor reorder within a partition) writes each event to `kb.events`
 * keyed by streamId (see EventEnvelope in kafkaMessages.ts). The topic is created at connect
 * when missing (auto-creation is off on most production clusters). Sends are capped by bytes
 * and their retries bounded; a failed send is logged and thrown, so the publisher retries it.
 */
export class KafkaEventFeed implements EventFeed {
  private readonly kafka: Pick<Kafka, 'producer' | 'admin'>;
  private readonly producer: Producer;
  private readonly topic: string;

  constructor(private readonly options: KafkaEventFeedOptions) {
    this.kafka = options.kafka ?? new Kafka({ clientId: options.clientId ?? 'kb-feed', brokers: options.brokers });
    this.producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, retry: FEED_PRODUCER_RETRY });
    this.topic = options.topic ?? EVENTS_TOPIC;
  }

  async connect(): Promise<this> {
    const admin: Admin = this.kafka.admin();
    await admin.connect();
    try {
      if (!(await admin.listTopics()).includes(this.topic)) {
        await admin.createTopics({ topics: [{ topic: this.topic, numPartitions: this.options.numPartitions ?? 6 }], waitForLeaders: true });
      }
    } finally {
      await admin.disconnect();
    }
    await this.producer.connect();
    return this;
  }

  async publish(events: RecordedEvent[]): Promise<void> {
    if (events.length === 0) return;
    for (const messages of feedBatches(events.map(eventMessage), this.options.maxBatchBytes ?? DEFAULT_FEED_BATCH_BYTES)) {
      try {
        await this.producer.send({ topic: this.topic, acks: -1, messages });
      } catch (err) {
        this.options.onError?.(err, { events: messages.length, bytes: messages.reduce((n, m) => n + messageBytes(m), 0) });
        throw err;
      }
    }
  }

  async close(): Promise<void> {
    await this.producer.disconnect();
  }
}
