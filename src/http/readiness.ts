import type { RequestHandler } from 'express';
import * as t from 'io-ts';
import { AppContext } from '../app/context';
import { reembeddingProgress } from '../search/vectorModels';
import { Readiness, respond } from './responses';

/** Events the projections may lag behind the head of the log and still be ready. */
const READY_LAG = 1000;

/**
 * GET /readyz: 200 ready when the embedding model is loaded and the projections are within
 * READY_LAG events of the head of the log; else 503 `warming` (model loading, or its load
 * failed: `embeddings: "failed"`) or `catching_up`. During an embedding model change (still
 * ready: searches use the old vectors) `reembedding: {from, to, done, total}` counts the
 * documents that have the new model's vectors.
 */
export function readinessHandler(ctx: AppContext): RequestHandler {
  return async (_req, res) => {
    const head = await ctx.eventStore.headPosition();
    const low = ctx.runner.lowWatermark();
    const caughtUp = head - low <= READY_LAG;
    const embeddings = ctx.warmup.state;
    const status = embeddings !== 'ready' ? ('warming' as const) : caughtUp ? ('ready' as const) : ('catching_up' as const);
    const reembedding = reembeddingProgress(await ctx.searchIndex.vectorModels());
    const body: t.OutputOf<typeof Readiness> = {
      status,
      head,
      projected: low,
      embeddings,
      ...(ctx.warmup.error ? { embeddingsError: ctx.warmup.error } : {}),
      ...(ctx.warmup.ms !== undefined ? { embeddingsWarmupMs: ctx.warmup.ms } : {}),
      ...(reembedding ? { reembedding } : {}),
    };
    respond(res, Readiness, body, status === 'ready' ? 200 : 503);
  };
}
