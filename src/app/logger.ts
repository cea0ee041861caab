import pino, { Logger } from 'pino';

/**
 * Redact the secret segment of public paths (search-link tokens, tool-endpoint tokens)
 * and drop query strings (they carry query text) before anything reaches a log.
 */
export function redactUrl(url: string): string {
  const path = url.split('?')[0];
  return path.replace(/^\/(public|mcp)\/[^/]+/, '/$1/[REDACTED]');
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'authorization', 'token', '*.token', 'password', '*.password', 'refreshToken', '*.refreshToken', 'accessToken', '*.accessToken', 'key', '*.key'],
        censor: '[REDACTED]',
      },
      base: undefined,
    },
    destination,
  );
}
