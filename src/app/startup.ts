/**
 * Start-up failures of the production adapters: one line naming the environment variable
 * and the (credential-free) URL, so an operator sees at once what to fix. main.ts prints
 * the message without a stack trace and exits with code 2, like a configuration error.
 */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

/** The URL with any user:password removed (also in comma-separated lists of hosts). */
export function redactCredentials(url: string): string {
  return url.replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, '$1***@');
}

function reason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const first = message.split('\n')[0].replace(/\s*Resolution note:.*$/, '').trim();
  return first.length > 300 ? `${first.slice(0, 300)}...` : first || 'unknown error';
}

/** Default bound on each start-up connection attempt. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 15_000;

/**
 * Runs `connect`; on failure or after `timeoutMs` calls `abandon` (to release whatever the
 * attempt holds) and throws StartupError: `cannot connect to <what> at <VAR>=<url>: <reason>`.
 */
export async function connectOrFail<T>(
  what: string,
  variable: string,
  url: string,
  connect: () => Promise<T>,
  options: { timeoutMs?: number; abandon?: () => Promise<unknown> | unknown } = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve().then(connect), timeout]);
  } catch (err) {
    // Releasing the failed attempt is best effort and bounded: the process is about to exit.
    await Promise.race([Promise.resolve().then(() => options.abandon?.()).catch(() => undefined), new Promise((r) => setTimeout(r, 2000).unref())]);
    throw new StartupError(`cannot connect to ${what} at ${variable}=${redactCredentials(url)}: ${reason(err)}`);
  } finally {
    clearTimeout(timer);
  }
}
