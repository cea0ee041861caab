/** How the actor behind an event proved who they are. */
export type AuthMethod = 'session' | 'api_key' | 'public_token' | 'system';

/** Metadata carried by every event in the log. */
export interface EventMetadata {
  /** User id of the actor, null for the system (e.g. the document processor). */
  actorId: string | null;
  authMethod: AuthMethod;
  correlationId: string;
  /** ISO 8601 time the command was decided. */
  occurredAt: string;
  /** Schema version of `data` for this event type. */
  schemaVersion: number;
  /** Workspace the event belongs to, when it belongs to one (audit and export filters). */
  workspaceId?: string;
}

/** A domain event as a decider emits it: a type and a payload. */
export interface DomainEvent<T extends string = string, D = unknown> {
  type: T;
  data: D;
}

/** An event ready to append: a unique id (the idempotency key) and its metadata. */
export interface NewEvent<T extends string = string, D = unknown> extends DomainEvent<T, D> {
  id: string;
  metadata: EventMetadata;
}

/** An event as stored in the log. */
export interface RecordedEvent<T extends string = string, D = unknown> extends NewEvent<T, D> {
  streamId: string;
  /** 0-based position of the event within its stream. */
  revision: number;
  /** 1-based global position in the whole log; increases strictly. */
  position: number;
  /** Hash chaining this event to the previous one in the log (hex SHA-256). */
  hash?: string;
}
