import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { SqliteKeyStore } from '../../src/adapters/sqlite/sqliteKeyStore';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { EncryptingEventStore } from '../../src/adapters/encryption/encryptingEventStore';
import { NewEvent } from '../../src/domain/event';
import { auditEntriesCollection, auditProjection } from '../../projections/audit/auditProjection';

/**
 * Found by the crash torture (bench/crashTorture.ts): the audit entries of a deleted document's
 * text events were `summary.erased: true` or not depending on whether the audit projection ran
 * before or after the erasure service destroyed the document's key (live: before; a rebuild, or
 * a projection catching up after a crash: after), so the read model differed from a rebuild.
 */
describe('audit trail of a document erased later', () => {
  let dir: string;
  let inner: SqliteEventStore;
  let keys: SqliteKeyStore;
  let store: EncryptingEventStore;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-audit-erasure-'));
    inner = new SqliteEventStore(path.join(dir, 'events.db'));
    keys = new SqliteKeyStore(path.join(dir, 'keys.db'));
    store = new EncryptingEventStore(inner, keys);
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is the same whether projected before the key was destroyed (live) or after (rebuild, catch-up after a crash)', async () => {
    const docId = randomUUID();
    const ws = randomUUID();
    const meta = { actorId: null, authMethod: 'system' as const, correlationId: 'c', occurredAt: '2026-01-01T00:00:00.000Z', schemaVersion: 1, workspaceId: ws };
    const ev = (type: string, data: unknown): NewEvent => ({ id: randomUUID(), type, data, metadata: meta });
    await store.append(
      `document-${docId}`,
      [
        ev('DocumentTextExtracted', { documentId: docId, workspaceId: ws, processingId: 'p', sections: [{ text: 'secret words' }], tokenCount: 2, sizeBytes: 12 }),
        ev('DocumentChunked', { documentId: docId, workspaceId: ws, processingId: 'p', chunks: [{ index: 0, content: 'secret words', tokenCount: 2 }] }),
      ],
      'no_stream',
    );
    const project = async (file: string) => {
      const rs = new SqliteReadStore(path.join(dir, file));
      const p = auditProjection(rs);
      await p.reset();
      await p.apply(await store.readAll(0, 100));
      const rows = (await auditEntriesCollection(rs).find({ workspaceId: ws })).sort((a, b) => a.position - b.position);
      await rs.close();
      return rows;
    };
    const live = await project('live.db');
    expect(live).toHaveLength(2);
    await keys.destroy(docId);
    const rebuilt = await project('rebuilt.db');
    expect(JSON.stringify(await store.readAll(0, 100))).toContain('"erased":true');
    expect(rebuilt).toEqual(live);
  });
});
