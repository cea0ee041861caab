import { readlinkSync } from 'node:fs';
import os from 'node:os';

/** The nice value background threads run at: the event loop (HTTP) wins the cores when both want them. */
export const BACKGROUND_NICE = 10;

/**
 * Lowers the scheduling priority of the calling thread only (Linux: a thread has its own nice
 * value; `setpriority` on its thread id changes that thread, not the process). Called first
 * thing by the ingest threads (extraction, document embedding): on 2 cores they otherwise
 * take turns with the event loop, and a request waits behind their time slices. Best effort:
 * false where it cannot be done (not Linux, no /proc); never raises a priority.
 */
export function lowerThisThreadPriority(nice = BACKGROUND_NICE): boolean {
  if (process.platform !== 'linux') return false;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    if (os.getPriority(tid) >= nice) return true;
    os.setPriority(tid, nice);
    return true;
  } catch {
    return false;
  }
}
