import 'reflect-metadata';
import http from 'node:http';
import { loadConfig, ConfigError } from './config/config';
import { createLogger } from './app/logger';
import { buildContainer, closeContext } from './container';
import { createApp } from './http/app';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  const { ctx } = await buildContainer(config, logger);
  await ctx.runner.start();
  for (const s of ctx.services) await s.start();
  const app = createApp(ctx);
  const server = http.createServer(app);
  server.headersTimeout = 65_000;
  server.requestTimeout = 15 * 60_000; // large uploads
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  logger.info({ port, host: config.host, dataDir: config.dataDir }, 'listening');
  // A machine-readable line for tests and scripts that start the server on port 0.
  if (process.env.KB_ANNOUNCE_PORT === '1') process.stdout.write(`KB_LISTENING ${port}\n`);

  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    server.close();
    closeContext(ctx)
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
