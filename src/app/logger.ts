import pino, { Logger } from 'pino';

/**
 * Path segments whose next segment is a credential: a search-link token (/public/<token>,
 * /mcp/<token>) or a search link's id, which opens its search at /s/<linkId> and is also
 * carried by the management paths (/public-links/<linkId>). /s/<id> of an instruction-set
 * page is redacted too: the two share the path and cannot be told apart without a look-up.
 */
const SECRET_AFTER = new Set(['public', 'mcp', 's', 'public-links']);

/**
 * Redact the secret segment of public paths (search-link tokens and ids, tool-endpoint
 * tokens) and drop query strings (they carry query text) before anything reaches a log.
 */
export function redactUrl(url: string): string {
  const path = url.split('?')[0];
  const segments = path.split('/');
  return segments
    .map((seg, i) => {
      // The segment after one of SECRET_AFTER (under any prefix) is a credential; so is anything token-shaped.
      const secret = (i > 0 && SECRET_AFTER.has(segments[i - 1].toLowerCase())) || /^[0-9a-f]{32,}/i.test(seg) || /%[0-9a-f]{0,2}$/i.test(seg);
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
