import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { GaugeSample, Metrics } from '../../ports/metrics';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const SLOW_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * Metrics in a registry of its own (several containers in one process, as in tests, never
 * share one), exposed in the Prometheus text format. Process metrics (CPU, memory, event-loop
 * lag) come with prom-client's defaults.
 */
export function prometheusMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'kb_' });
  const http = new Histogram({ name: 'kb_http_request_duration_seconds', help: 'HTTP requests by method, route template and status', labelNames: ['method', 'route', 'status'], buckets: LATENCY_BUCKETS, registers: [registry] });
  const httpCount = new Counter({ name: 'kb_http_requests_total', help: 'HTTP requests by method, route template and status', labelNames: ['method', 'route', 'status'], registers: [registry] });
  const append = new Histogram({ name: 'kb_event_store_append_duration_seconds', help: 'Event-store appends, from the call until durable', buckets: LATENCY_BUCKETS, registers: [registry] });
  const batch = new Histogram({ name: 'kb_event_store_group_commit_appends', help: 'Appends per group commit (one transaction and fsync)', buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256], registers: [registry] });
  const inFlight = new Histogram({ name: 'kb_event_store_appends_in_flight', help: 'EventStoreDB: appends in flight together when one is sent, itself included (the server commits concurrent appends together)', buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256], registers: [registry] });
  const extraction = new Histogram({ name: 'kb_extraction_duration_seconds', help: 'Text extraction of a document run, by kind and outcome', labelNames: ['kind', 'outcome'], buckets: SLOW_BUCKETS, registers: [registry] });
  const embedding = new Histogram({ name: 'kb_embedding_duration_seconds', help: 'Embedding calls of the document processor', buckets: SLOW_BUCKETS, registers: [registry] });
  const chunks = new Counter({ name: 'kb_chunks_embedded_total', help: 'Chunks embedded by the document processor', registers: [registry] });
  const search = new Histogram({ name: 'kb_search_duration_seconds', help: 'Searches by mode', labelNames: ['mode'], buckets: LATENCY_BUCKETS, registers: [registry] });
  const limited = new Counter({ name: 'kb_rate_limit_rejections_total', help: 'Requests refused by a rate limit, by limiter', labelNames: ['limiter'], registers: [registry] });
  const malformed = new Counter({ name: 'kb_http_malformed_requests_total', help: 'Connections whose request could not be parsed as HTTP or whose headers timed out, by the error code answered', labelNames: ['code'], registers: [registry] });
  // The labelled series of each method, route template and status, looked up once (not hashed from the labels per request).
  const httpSeries = new Map<string, { duration: { observe(v: number): void }; count: { inc(): void } }>();
  return {
    httpRequest: (r) => {
      const key = `${r.method} ${r.status} ${r.route}`;
      let series = httpSeries.get(key);
      if (!series) {
        const labels = { method: r.method, route: r.route, status: String(r.status) };
        series = { duration: http.labels(labels), count: httpCount.labels(labels) };
        httpSeries.set(key, series);
      }
      series.duration.observe(r.seconds);
      series.count.inc();
    },
    eventStoreAppend: (seconds) => append.observe(seconds),
    groupCommit: (appends) => batch.observe(appends),
    appendsInFlight: (appends) => inFlight.observe(appends),
    extraction: (r) => extraction.observe({ kind: r.kind, outcome: r.outcome }, r.seconds),
    embedding: (r) => {
      embedding.observe(r.seconds);
      chunks.inc(r.chunks);
    },
    search: (r) => search.observe({ mode: r.mode }, r.seconds),
    rateLimited: (limiter) => limited.inc({ limiter }),
    malformedRequest: (code) => malformed.inc({ code }),
    gauge: (spec, collect: () => Promise<GaugeSample[]>) => {
      new Gauge({
        name: spec.name,
        help: spec.help,
        labelNames: [...spec.labelNames],
        registers: [registry],
        async collect() {
          this.reset();
          for (const s of await collect()) this.set({ ...s.labels }, s.value);
        },
      });
    },
    exposition: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
  };
}
