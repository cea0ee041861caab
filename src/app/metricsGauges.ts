import { AppContext } from './context';
import { documentsCollection } from '../../projections/document/documentProjection';
import { ProcessingStatus } from '../domain/document/events';

const STATUSES: readonly ProcessingStatus[] = ['PENDING', 'PROCESSING', 'VERIFIED', 'FAILED'];

/** Gauges read at scrape time: the processing queue by state, and how far each projection is behind the log. */
export function registerGauges(ctx: AppContext): void {
  ctx.metrics.gauge({ name: 'kb_processing_documents', help: 'Documents by processing state (PENDING and PROCESSING are the processing queue)', labelNames: ['status'] }, async () => {
    const docs = documentsCollection(ctx.readStore);
    return Promise.all(STATUSES.map(async (status) => ({ labels: { status }, value: await docs.count({ processingStatus: status }) })));
  });
  ctx.metrics.gauge({ name: 'kb_projection_lag_events', help: 'Events in the log not yet applied, by projection', labelNames: ['projection'] }, async () => {
    const head = await ctx.eventStore.headPosition();
    return ctx.projections.map((p) => ({ labels: { projection: p.name }, value: Math.max(0, head - ctx.runner.positionOf(p.name)) }));
  });
  ctx.metrics.gauge({ name: 'kb_event_log_head_position', help: 'Position of the last event in the log', labelNames: [] }, async () => [{ labels: {}, value: await ctx.eventStore.headPosition() }]);
}
