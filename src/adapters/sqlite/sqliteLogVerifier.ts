import Database from 'better-sqlite3';
import fs from 'node:fs';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { chainHash, GENESIS_HASH } from '../../core/hashChain';
import { LogChainBreak, LogVerification, LogVerifier } from '../../ports/logVerifier';
import { EventRow } from './sqliteEventStore';

/** Rows read per batch before the walk yields to the event loop (keeps requests answering during a long walk). */
const BATCH = 2_000;

interface Walk {
  ok: boolean;
  checked: number;
  headPosition: number;
  /** Events per workspace id, counted from the events' metadata (or data) during the walk. */
  perWorkspace: Map<string, number>;
  firstBreak: (Omit<LogChainBreak, 'inThisWorkspace'> & { id: string; type: string; workspaceId: string | null }) | null;
  startedAt: string;
  finishedAt: string;
}

function workspaceIdOf(data: unknown, metadata: unknown): string | null {
  const m = metadata as { workspaceId?: unknown } | null;
  if (m && typeof m.workspaceId === 'string') return m.workspaceId;
  const d = data as { workspaceId?: unknown } | null;
  return d && typeof d.workspaceId === 'string' ? d.workspaceId : null;
}

/**
 * The same walk as `verifyEventLog` (the CLI's `kb verify`), in batches of BATCH rows by
 * position with a yield between them, on its own read-only connection (WAL: writers go on).
 * One walk at a time: callers arriving during a walk get its result.
 */
export class SqliteLogVerifier implements LogVerifier {
  private running: Promise<Walk> | null = null;

  constructor(
    private readonly file: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async verify(workspaceId: string): Promise<LogVerification> {
    if (!this.running) {
      this.running = this.walk().finally(() => {
        this.running = null;
      });
    }
    const w = await this.running;
    const b = w.firstBreak;
    const inThisWorkspace = b !== null && b.workspaceId === workspaceId;
    return {
      ok: w.ok,
      checked: w.checked,
      workspaceEvents: w.perWorkspace.get(workspaceId) ?? 0,
      headPosition: w.headPosition,
      firstBreak: b ? { position: b.position, reason: b.reason, inThisWorkspace, ...(inThisWorkspace ? { id: b.id, type: b.type } : {}) } : null,
      startedAt: w.startedAt,
      finishedAt: w.finishedAt,
    };
  }

  private async walk(): Promise<Walk> {
    const startedAt = this.now().toISOString();
    const perWorkspace = new Map<string, number>();
    const done = (ok: boolean, checked: number, headPosition: number, firstBreak: Walk['firstBreak']): Walk => ({ ok, checked, headPosition, perWorkspace, firstBreak, startedAt, finishedAt: this.now().toISOString() });
    if (!fs.existsSync(this.file)) return done(true, 0, 0, null);
    const db = new Database(this.file, { readonly: true, fileMustExist: true });
    try {
      // The head when the walk starts: events appended during it are checked by the next walk.
      const head = (db.prepare('SELECT COALESCE(MAX(position), 0) AS p FROM events').get() as { p: number }).p;
      const batch = db.prepare('SELECT * FROM events WHERE position > ? AND position <= ? ORDER BY position LIMIT ?');
      let prev = GENESIS_HASH;
      let checked = 0;
      let expected = 1;
      let after = 0;
      for (;;) {
        const rows = batch.all(after, head, BATCH) as EventRow[];
        if (rows.length === 0) break;
        for (const row of rows) {
          checked += 1;
          let data: unknown;
          let metadata: unknown;
          let ws: string | null = null;
          try {
            data = JSON.parse(row.data);
            metadata = JSON.parse(row.metadata);
            ws = workspaceIdOf(data, metadata);
          } catch {
            return done(false, checked, head, { position: row.position, id: row.id, type: row.type, workspaceId: null, reason: 'stored data is not valid JSON' });
          }
          const at = { position: row.position, id: row.id, type: row.type, workspaceId: ws };
          if (row.position !== expected) return done(false, checked, head, { ...at, reason: `position ${expected} is missing` });
          const hash = chainHash(prev, { id: row.id, streamId: row.stream_id, revision: row.revision, position: row.position, type: row.type, data, metadata });
          if (hash !== row.hash) return done(false, checked, head, { ...at, reason: 'hash does not match its content and the previous hash' });
          if (ws) perWorkspace.set(ws, (perWorkspace.get(ws) ?? 0) + 1);
          prev = row.hash;
          expected += 1;
          after = row.position;
        }
        await yieldToLoop();
      }
      if (expected - 1 !== head) return done(false, checked, head, { position: expected, id: '', type: '', workspaceId: null, reason: `position ${expected} is missing` });
      return done(true, checked, head, null);
    } finally {
      db.close();
    }
  }
}
