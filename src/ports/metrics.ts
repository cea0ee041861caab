/**
 * Operational metrics, as the code that does the work reports them. The composition root
 * picks the implementation (Prometheus exposition, src/adapters/metrics); nothing else knows
 * the metrics library. Labels are small closed sets: route templates, never raw paths, ids
 * or tokens.
 */
export interface Metrics {
  /** One HTTP request answered. `route` is the matched route template (`/v1/documents/:docId`), or `unmatched`. */
  httpRequest(r: { method: string; route: string; status: number; seconds: number }): void;
  /** One append to the event store, from the call until it is durable (group commit included). */
  eventStoreAppend(seconds: number): void;
  /** One group commit: how many appends shared its transaction and fsync. */
  groupCommit(appends: number): void;
  /**
   * One append sent to a server-side event store (EventStoreDB): how many appends were in
   * flight on the connection with it, itself included. The server's writer commits concurrent
   * appends together; its batches are not visible to the client, so this is what it can group.
   */
  appendsInFlight(appends: number): void;
  /** One text extraction of a document run. */
  extraction(r: { kind: string; outcome: 'ok' | 'error'; seconds: number }): void;
  /** One embedding call of the processor, for `chunks` chunks. */
  embedding(r: { chunks: number; seconds: number }): void;
  /** One search, by mode (hybrid, lexical, vector ...). */
  search(r: { mode: string; seconds: number }): void;
  /** One request refused by a rate limit (by the limiter's name, e.g. `uploads`). */
  rateLimited(limiter: string): void;
  /** One connection whose request could not be parsed as HTTP (or timed out before its headers), by the error code it was answered with. */
  malformedRequest(code: string): void;
  /** A gauge read at scrape time (queue depth, projection lag). */
  gauge(spec: { name: string; help: string; labelNames: readonly string[] }, collect: () => Promise<GaugeSample[]>): void;
  /** The exposition of every metric (Prometheus text format). */
  exposition(): Promise<{ contentType: string; body: string }>;
}

export interface GaugeSample {
  labels: Readonly<Record<string, string>>;
  value: number;
}

/** Records nothing (tools and unit tests). */
export const noMetrics: Metrics = {
  httpRequest: () => undefined,
  eventStoreAppend: () => undefined,
  groupCommit: () => undefined,
  appendsInFlight: () => undefined,
  extraction: () => undefined,
  embedding: () => undefined,
  search: () => undefined,
  rateLimited: () => undefined,
  malformedRequest: () => undefined,
  gauge: () => undefined,
  exposition: async () => ({ contentType: 'text/plain; version=0.0.4; charset=utf-8', body: '' }),
};

export const METRICS = Symbol('METRICS');
