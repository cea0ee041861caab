import { Kafka, Producer } from 'kafkajs';
import { RecordedEvent } from '../../domain/event';
import { EventFeed } from '../../ports/eventFeed';
import { EVENTS_TOPIC, eventMessage } from './kafkaMessages';

export interface KafkaEventFeedOptions {
  brokers: string[];
  clientId?: string;
  topic?: string;
}

/**
 * EventFeed on Kafka: an idempotent producer (acks=all, one request in flight, so retries
 * neither duplicate nor reorder within a partition) writes each event to `kb.events`
 * keyed by streamId (see EventEnvelope in kafkaMessages.ts).
 */
export class KafkaEventFeed implements EventFeed {
  private readonly producer: Producer;
  private readonly topic: string;

  constructor(options: KafkaEventFeedOptions) {
    const kafka = new Kafka({ clientId: options.clientId ?? 'kb-feed', brokers: options.brokers });
    this.producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    this.topic = options.topic ?? EVENTS_TOPIC;
  }

  async connect(): Promise<this> {
    await this.producer.connect();
    return this;
  }

  async publish(events: RecordedEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.producer.send({ topic: this.topic, acks: -1, messages: events.map(eventMessage) });
  }

  async close(): Promise<void> {
    await this.producer.disconnect();
  }
}
