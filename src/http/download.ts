import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { Response } from 'express';
import { progressDeadline } from './wholeDocumentReads';

/** The longest delay setTimeout takes (a longer one fires at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A Content-Disposition value for a download (RFC 6266): `filename` an ASCII fallback with
 * quotes, backslashes, controls and non-ASCII replaced, `filename*` the exact UTF-8 name
 * percent-encoded (RFC 8187), so no name can break out of the header or the quotes.
 */
export function contentDisposition(filename: string, type: 'attachment' | 'inline' = 'attachment'): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, '_').trim() || 'download';
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${type}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/** Text types are served as UTF-8; anything else with its own type, never sniffed. */
function contentTypeOf(mimeType: string): string {
  return /^text\//.test(mimeType) ? `${mimeType}; charset=utf-8` : mimeType;
}

/**
 * Streams a stored file as an attachment (never rendered by the browser in our origin). A client
 * that takes nothing of it for `stallMs` loses its connection: otherwise a download never read
 * held its connection and the stored file open for good (fourth hostile look: enough of them
 * could run the process out of file descriptors). Nor can one that takes a little now and then:
 * once `stallMs` has passed, the download must have averaged `minBytesPerS` since it began
 * (`progressDeadline`), or both ends are closed.
 */
export async function sendFile(res: Response, file: { filename: string; mimeType: string; stream: Readable }, stallMs: number, minBytesPerS = Infinity): Promise<void> {
  res.status(200);
  res.setHeader('Content-Type', contentTypeOf(file.mimeType));
  res.setHeader('Content-Disposition', contentDisposition(file.filename));
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
  res.setHeader('Cache-Control', 'private, no-store');
  // The file is read only as fast as the connection takes it: no chunk read for stallMs (or the
  // last ones not taken within it), nothing taken: both ends are closed, which ends the pipeline.
  const stalled = setTimeout(() => {
    file.stream.destroy();
    res.destroy();
  }, stallMs);
  // The file is read as the connection takes it: bytes read, less what waits in this process's buffers, were taken.
  const startedAt = Date.now();
  let read = 0;
  const tooSlow = () => {
    file.stream.destroy();
    res.destroy();
  };
  let floor: NodeJS.Timeout | undefined;
  const armFloor = (taken: number) => {
    clearTimeout(floor);
    if (minBytesPerS === Infinity) return;
    // (A delay past setTimeout's 2^31-1 ms would fire at once.)
    floor = setTimeout(tooSlow, Math.min(MAX_TIMER_MS, Math.max(0, progressDeadline(startedAt, stallMs, minBytesPerS, taken) - Date.now())));
  };
  armFloor(0);
  file.stream.on('data', (chunk: Buffer | string) => {
    // (This chunk is not handed to the connection yet: the ones before it are.)
    const taken = Math.max(0, read - res.writableLength);
    read += chunk.length;
    stalled.refresh();
    armFloor(taken);
  });
  try {
    await pipeline(file.stream, res);
  } catch {
    // The client left, or the file could not be read mid-way: the answer is cut short.
    file.stream.destroy();
    res.destroy();
  } finally {
    clearTimeout(stalled);
    clearTimeout(floor);
  }
}
