import Database from 'better-sqlite3';
import fs from 'node:fs';
import { chainHash, GENESIS_HASH } from '../../core/hashChain';
import { EventRow } from './sqliteEventStore';

export interface ChainBreak {
  position: number;
  id: string;
  type: string;
  reason: string;
}

export interface VerifyResult {
  checked: number;
  ok: boolean;
  firstBreak: ChainBreak | null;
}

type Row = EventRow;

/**
 * Walk the SQLite event log in position order and recompute the hash chain from the stored
 * bytes (sealed text included, so an erased document does not break it). The first event
 * whose stored hash differs from the recomputed one is where the log was changed: an edited,
 * inserted or removed event breaks the chain there.
 */
export function verifyEventLog(file: string, onProgress?: (done: number, total: number) => void): VerifyResult {
  if (!fs.existsSync(file)) return { checked: 0, ok: true, firstBreak: null };
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const total = (db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n;
    let prev = GENESIS_HASH;
    let checked = 0;
    let expectedPosition = 1;
    for (const row of db.prepare('SELECT * FROM events ORDER BY position').iterate() as IterableIterator<Row>) {
      checked += 1;
      const at = { position: row.position, id: row.id, type: row.type };
      if (row.position !== expectedPosition) {
        return { checked, ok: false, firstBreak: { ...at, reason: `position ${expectedPosition} is missing` } };
      }
      let data: unknown;
      let metadata: unknown;
      try {
        data = JSON.parse(row.data);
        metadata = JSON.parse(row.metadata);
      } catch {
        return { checked, ok: false, firstBreak: { ...at, reason: 'stored data is not valid JSON' } };
      }
      const hash = chainHash(prev, { id: row.id, streamId: row.stream_id, revision: row.revision, position: row.position, type: row.type, data, metadata });
      if (hash !== row.hash) return { checked, ok: false, firstBreak: { ...at, reason: 'hash does not match its content and the previous hash' } };
      prev = row.hash;
      expectedPosition += 1;
      if (onProgress && checked % 1000 === 0) onProgress(checked, total);
    }
    onProgress?.(checked, total);
    return { checked, ok: true, firstBreak: null };
  } finally {
    db.close();
  }
}
