import pino, { Logger } from 'pino';

/**
 * Redact the secret segment of public paths (search-link tokens, tool-endpoint tokens)
 * and drop query strings (they carry query text) before anything reaches a log.
 */
export function redactUrl(url: string): string {
  const path = url.split('?')[0];
  const segments = path.split('/');
  return segments
    .map((seg, i) => {
      // The segment after /public/ or /mcp/ (under any prefix) is a token; so is anything token-shaped.
      const secret = (i > 0 && (segments[i - 1] === 'public' || segments[i - 1] === 'mcp')) || /^[0-9a-f]{32,}/i.test(seg) || /%[0-9a-f]{0,2}$/i.test(seg);
      return secret && seg !== '' ? '[REDACTED]' : seg;
    })
    .join('/');
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
