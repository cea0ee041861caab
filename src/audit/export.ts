import fs from 'node:fs';
import { Writable } from 'node:stream';
import { once } from 'node:events';
import { RecordedEvent } from '../domain/event';
import { EventStore } from '../ports/eventStore';
import { workspaceOf } from './summary';

export interface ExportOptions {
  /** A global position (events after it) or an ISO time (events at or after it). */
  from?: string;
  workspaceId?: string;
  /** File to write; stdout when absent. */
  out?: string;
  onProgress?: (done: number, total: number) => void;
}

/** Parse `--name value` and `--name=value` options. */
export function parseOptions(args: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!a.startsWith('--')) continue;
    const eq = a.indexOf('=');
    if (eq > 0) out[a.slice(2, eq)] = a.slice(eq + 1);
    else if (i + 1 < args.length && !args[i + 1].startsWith('--')) out[a.slice(2)] = args[++i];
    else out[a.slice(2)] = 'true';
  }
  return out;
}

/** Credentials never leave the service, not even as hashes (password, API key, token hashes). */
const SECRET_FIELD = /(Hash$|^hash$|password|secret)/i;
function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, SECRET_FIELD.test(k) ? '[redacted]' : redact(v)]));
}

/** An event as it leaves the service (export, ad-hoc projections): credentials redacted, no hash. */
export interface PublicEvent {
  position: number;
  id: string;
  streamId: string;
  revision: number;
  type: string;
  data: unknown;
  metadata: RecordedEvent['metadata'];
}

export function publicEvent(e: RecordedEvent): PublicEvent {
  return { position: e.position, id: e.id, streamId: e.streamId, revision: e.revision, type: e.type, data: redact(e.data), metadata: e.metadata };
}

/** One line of the export: the event as the log holds it, its text erased where its key is gone. */
function toLine(e: RecordedEvent): string {
  return `${JSON.stringify(publicEvent(e))}\n`;
}

/**
 * Write the log as NDJSON (one event per line, in log order) for analytics and SIEM tools.
 * It reads through the store given, so with the encrypting store erased documents' text
 * comes out as empty strings with `data.erased: true`.
 */
export async function exportEvents(store: EventStore, options: ExportOptions): Promise<{ written: number; scanned: number }> {
  let afterPosition = 0;
  let fromTime: string | null = null;
  if (options.from !== undefined) {
    if (/^\d+$/.test(options.from)) afterPosition = Math.max(0, Number(options.from) - 1);
    else {
      const t = Date.parse(options.from);
      if (Number.isNaN(t)) throw new Error(`--from must be a position or an ISO time, not ${options.from}`);
      fromTime = new Date(t).toISOString();
    }
  }
  const out: Writable = options.out ? fs.createWriteStream(options.out, { mode: 0o600 }) : process.stdout;
  const head = await store.headPosition();
  let written = 0;
  let scanned = 0;
  let position = afterPosition;
  for (;;) {
    const batch = await store.readAll(position, 500);
    if (batch.length === 0) break;
    let chunk = '';
    for (const e of batch) {
      scanned += 1;
      if (fromTime && e.metadata.occurredAt < fromTime) continue;
      if (options.workspaceId && workspaceOf(e) !== options.workspaceId) continue;
      chunk += toLine(e);
      written += 1;
    }
    if (chunk && !out.write(chunk)) await once(out, 'drain');
    position = batch[batch.length - 1].position;
    options.onProgress?.(position, head);
    if (position >= head) break;
  }
  options.onProgress?.(head, head);
  if (options.out) {
    out.end();
    await once(out, 'finish');
  }
  return { written, scanned };
}
