import express from 'express';
import { AppContext } from '../app/context';
import { readinessHandler } from '../http/readiness';
import { metricsHandler } from '../http/metrics';
import { Health, respond } from '../http/responses';

/**
 * The HTTP surface of the projector and worker roles: /healthz (the process is up) and, for
 * the projector, /readyz (its projections are within 1000 events of the head of the log).
 */
export function healthApp(ctx: AppContext, options: { readiness: boolean }): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.get('/healthz', (_req, res) => {
    respond(res, Health, { status: 'ok', role: ctx.config.role });
  });
  if (ctx.config.metrics.port === undefined) app.get('/metrics', metricsHandler(ctx));
  if (options.readiness) {
    app.get('/readyz', readinessHandler(ctx));
  }
  app.use((_req, res) => {
    res.status(404).json({ error: { code: 'NOT_FOUND', message: `The ${ctx.config.role} role serves only health checks.` } });
  });
  return app;
}
