import 'reflect-metadata';
import http from 'node:http';
import express from 'express';
import { DomainError } from './domain/errors';
import { metricsHandler } from './http/metrics';
import { sendError } from './http/errors';
import { loadConfig, ConfigError } from './config/config';
import { createLogger } from './app/logger';
import { StartupError } from './app/startup';
import { buildContainer, closeContainer } from './container';
import { startRole } from './roles/startRole';
import { rehearses, rehearseUpload } from './roles/rehearsal';
import { expressServerOptions } from './http/expressServer';
import { answerClientErrors } from './http/clientErrors';
import { optional, WARM_SEARCH_THREAD } from './app/tokens';
import type { WarmUpSample } from './adapters/embedded/searchWorkerProtocol';

/** Configuration and connection problems: one line (no stack trace), exit code 2. */
function exitOnStartupProblem(err: unknown): never | void {
  if (err instanceof ConfigError || err instanceof StartupError) {
    console.error(err.message);
    process.exit(2);
  }
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    exitOnStartupProblem(err);
    throw err;
  }
  const logger = createLogger(config.logLevel);
  let built;
  try {
    built = await buildContainer(config, logger);
  } catch (err) {
    exitOnStartupProblem(err);
    throw err;
  }
  const { ctx, di } = built;
  const role = await startRole(di);
  if (rehearses(config, ctx.embeddings)) {
    // After the other warm-ups (the model it borrows, the spare extraction worker it takes), and before /readyz says ready.
    const before = ctx.warmup.done;
    const c = config;
    ctx.warmup.add('start-up rehearsal', async () => {
      await before;
      // Not needed to serve anything: a failure only leaves the first upload slower.
      await rehearseUpload(c, logger, ctx.embeddings, optional<(sample: WarmUpSample) => Promise<void>>(di, WARM_SEARCH_THREAD)).catch((err: unknown) => logger.warn({ err }, 'the start-up rehearsal failed; the first upload runs cold code'));
    });
  }
  // Temp files of uploads cut off by a crash of the previous run. Nothing is in flight yet: this
  // process has not started listening, and a data dir belongs to one server process. (A store
  // shared by several processes, GridFS, spares uploads younger than its own floor.)
  const swept = await ctx.blobStore.removeStaleTempFiles?.(0);
  if (swept) logger.info({ removed: swept }, 'removed temp files of interrupted uploads');
  const server = http.createServer(
    {
      // Headers must arrive quickly. (Since node 18 this clock starts at a request's first byte,
      // not when a kept-alive connection goes idle, so it may be shorter than keepAliveTimeout.)
      headersTimeout: config.headersTimeoutMs,
      // Per-route body limits are enforced in the app (408 in the route's envelope); this is the
      // backstop for the longest legitimate request: headers, then an upload's body.
      requestTimeout: config.headersTimeoutMs + Math.max(config.uploadTimeoutMs, config.bodyTimeoutMs),
      // How often node checks those two (default 30 s would stretch a 20 s header limit to 50 s).
      connectionsCheckingInterval: Math.min(5_000, Math.max(100, Math.floor(config.headersTimeoutMs / 4))),
      ...expressServerOptions(role.app),
    },
    role.app,
  );
  // Longer than a load balancer's idle time-out (AWS ALB: 60 s), so it never reuses a connection we just closed.
  server.keepAliveTimeout = config.keepAliveTimeoutMs;
  // Requests node cannot parse (or whose headers time out): the envelope, not node's bare 400.
  answerClientErrors(server, ctx.metrics);
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  logger.info({ port, host: config.host, role: config.role, dataDir: config.dataDir }, 'listening');
  // A machine-readable line for tests and scripts that start the server on port 0.
  if (process.env.KB_ANNOUNCE_PORT === '1') process.stdout.write(`KB_LISTENING ${port}\n`);

  // KB_METRICS_PORT: /metrics on a listener of its own (kept off the public port).
  let metricsServer: http.Server | undefined;
  if (config.metrics.port !== undefined) {
    const metricsApp = express();
    metricsApp.disable('x-powered-by');
    metricsApp.get('/metrics', metricsHandler(ctx));
    metricsApp.use((_req, res) => {
      res.status(404).json({ error: { code: 'NOT_FOUND', message: 'This port serves only /metrics.' } });
    });
    metricsApp.use((err: unknown, req: express.Request, res: express.Response, _next: express.NextFunction) => {
      if (err instanceof DomainError) sendError(req, res, err);
      else res.status(500).json({ error: { code: 'INTERNAL_ERROR', message: 'Something went wrong on our side.' } });
    });
    const ms = http.createServer({ headersTimeout: config.headersTimeoutMs, requestTimeout: config.headersTimeoutMs + config.bodyTimeoutMs, ...expressServerOptions(metricsApp) }, metricsApp);
    metricsServer = ms;
    answerClientErrors(ms, ctx.metrics);
    await new Promise<void>((resolve) => ms.listen(config.metrics.port, config.host, resolve));
    const a = ms.address();
    const metricsPort = typeof a === 'object' && a ? a.port : config.metrics.port;
    logger.info({ port: metricsPort, host: config.host }, 'metrics listening');
    if (process.env.KB_ANNOUNCE_PORT === '1') process.stdout.write(`KB_METRICS_LISTENING ${metricsPort}\n`);
  }

  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    server.close();
    metricsServer?.close();
    role
      .stop()
      .then(() => closeContainer(di))
      .then(() => process.exit(0))
      .catch((err) => {
        logger.error({ err }, 'error during shutdown');
        process.exit(1);
      });
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((err) => {
  console.error('fatal:', err instanceof Error ? err.message : err);
  process.exit(1);
});
