import { Readable, Writable } from 'node:stream';
import type { Response } from 'express';
import { sendFile } from '../../src/http/download';
import { progressDeadline } from '../../src/http/wholeDocumentReads';

/**
 * The average-rate floor of a download (src/http/download.ts): a connection that takes its file
 * a little at a time, never idle long enough for the stall bound, is closed once it falls
 * below the floor after the grace period. The "connection" is a Writable that accepts one
 * 16 KiB write every 20 ms (~800 KiB/s); outcomes only, never times.
 */

/** A response whose connection takes one write every `everyMs`. */
function slowResponse(everyMs: number): { res: Response; taken: () => number; destroyed: () => boolean } {
  let taken = 0;
  const w = new Writable({
    highWaterMark: 16 * 1024,
    autoDestroy: false, // destroyed only by sendFile
    write(chunk: Buffer, _enc, cb) {
      setTimeout(() => {
        taken += chunk.length;
        cb();
      }, everyMs);
    },
  });
  const res = Object.assign(w, { status: () => res, setHeader: () => res }) as unknown as Response;
  return { res, taken: () => taken, destroyed: () => w.destroyed };
}

/** 4 MiB in 16 KiB chunks, read as the pipeline asks. */
function file(bytes = 4 * 1024 * 1024): { filename: string; mimeType: string; stream: Readable } {
  let left = bytes;
  const stream = new Readable({
    highWaterMark: 16 * 1024,
    read() {
      if (left <= 0) return void this.push(null);
      const n = Math.min(16 * 1024, left);
      left -= n;
      this.push(Buffer.alloc(n, 0x61));
    },
  });
  return { filename: 'f.txt', mimeType: 'text/plain', stream };
}

describe('download rate floor', () => {
  it('progressDeadline: the grace period first, then the bytes taken at the floor rate', () => {
    expect(progressDeadline(1000, 500, 1024, 0)).toBe(1500);
    expect(progressDeadline(1000, 500, 1024, 256)).toBe(1500);
    expect(progressDeadline(1000, 500, 1024, 10 * 1024)).toBe(11_000);
  });

  it('a connection that takes its file below the floor is closed before the end, though it never stalls', async () => {
    const { res, taken, destroyed } = slowResponse(20);
    await sendFile(res, file(), 1000, 8 * 1024 * 1024);
    expect(destroyed()).toBe(true);
    expect(taken()).toBeLessThan(4 * 1024 * 1024);
  });

  it('the same connection gets the whole file without the floor (the stall bound alone never fires)', async () => {
    const { res, taken, destroyed } = slowResponse(5);
    await sendFile(res, file(1024 * 1024), 1000);
    expect(destroyed()).toBe(false);
    expect(taken()).toBe(1024 * 1024);
  });

  it('a connection above the floor gets the whole file', async () => {
    const { res, taken } = slowResponse(0);
    await sendFile(res, file(), 1000, 64 * 1024);
    expect(taken()).toBe(4 * 1024 * 1024);
  });
});
