import type { RequestHandler } from 'express';
import { AppContext } from '../app/context';

/** Events the projections may lag behind the head of the log and still be ready. */
const READY_LAG = 1000;

/** GET /readyz: 200 ready when the projections are within READY_LAG events of the head of the log, else 503 catching_up. */
export function readinessHandler(ctx: AppContext): RequestHandler {
  return async (_req, res) => {
    const head = await ctx.eventStore.headPosition();
    const low = ctx.runner.lowWatermark();
    const ready = head - low <= READY_LAG;
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'catching_up', head, projected: low });
  };
}
