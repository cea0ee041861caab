import { AppContext } from './context';
import { documentsCollection } from '../../projections/document/documentProjection';
import { ProcessingStatus } from '../domain/document/events';
import { reembeddingProgress } from '../search/vectorModels';

const STATUSES: readonly ProcessingStatus[] = ['PENDING', 'PROCESSING', 'VERIFIED', 'FAILED'];

/**
 * Gauges read at scrape time: the processing queue by state, how far each projection is behind
 * the log, the search index's embedding model and, during a model change, its progress.
 */
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
  ctx.metrics.gauge({ name: 'kb_embedding_model_active', help: 'The embedding model of the vectors searches use (1; absent while the index holds no vector)', labelNames: ['model'] }, async () => {
    const models = await ctx.searchIndex.vectorModels();
    return models.active ? [{ labels: { model: models.active.modelId }, value: 1 }] : [];
  });
  ctx.metrics.gauge(
    { name: 'kb_reembedding_documents', help: 'During an embedding model change: documents indexed (state="total") and those with the new model\'s vectors (state="done"); absent otherwise', labelNames: ['from', 'to', 'state'] },
    async () => {
      const p = reembeddingProgress(await ctx.searchIndex.vectorModels());
      if (!p) return [];
      return [
        { labels: { from: p.from, to: p.to, state: 'done' }, value: p.done },
        { labels: { from: p.from, to: p.to, state: 'total' }, value: p.total },
      ];
    },
  );
}
