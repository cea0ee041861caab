import 'reflect-metadata';
import http from 'node:http';
import { loadConfig, ConfigError } from './config/config';
import { createLogger } from './app/logger';
import { StartupError } from './app/startup';
import { buildContainer, closeContext } from './container';
import { startRole } from './roles/startRole';

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
  const { ctx } = built;
  const role = await startRole(ctx);
  const server = http.createServer(role.app);
  server.headersTimeout = 65_000;
  server.requestTimeout = 15 * 60_000; // large uploads
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  logger.info({ port, host: config.host, role: config.role, dataDir: config.dataDir }, 'listening');
  // A machine-readable line for tests and scripts that start the server on port 0.
  if (process.env.KB_ANNOUNCE_PORT === '1') process.stdout.write(`KB_LISTENING ${port}\n`);

  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    server.close();
    role
      .stop()
      .then(() => closeContext(ctx))
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
