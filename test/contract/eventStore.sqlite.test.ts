import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { eventStoreContract } from './eventStore.contract';

const dir = mkdtempSync(path.join(tmpdir(), 'kb-es-contract-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

eventStoreContract('SqliteEventStore', async () => new SqliteEventStore(path.join(dir, `${randomUUID()}.db`)));

describe('SqliteEventStore durability', () => {
  it('keeps appended events across close and reopen', async () => {
    const file = path.join(dir, 'durable.db');
    const first = new SqliteEventStore(file);
    const metadata = { actorId: 'u', authMethod: 'session' as const, correlationId: 'c', occurredAt: '2024-01-01T00:00:00.000Z', schemaVersion: 1 };
    const ids = [randomUUID(), randomUUID()];
    const appended = await first.append('doc-1', ids.map((id, i) => ({ id, type: `T${i}`, data: { i }, metadata })), 'no_stream');
    await first.close();

    const reopened = new SqliteEventStore(file);
    try {
      expect(await reopened.headPosition()).toBe(appended.position);
      const events = await reopened.readStream('doc-1');
      expect(events.map((e) => e.id)).toEqual(ids);
      expect(events.map((e) => e.data)).toEqual([{ i: 0 }, { i: 1 }]);
      // The stream's revision survived too: appending at revision 1 works, 0 conflicts.
      await expect(reopened.append('doc-1', [{ id: randomUUID(), type: 'T2', data: {}, metadata }], 0)).rejects.toThrow(/expected revision/);
      expect((await reopened.append('doc-1', [{ id: randomUUID(), type: 'T2', data: {}, metadata }], 1)).nextRevision).toBe(2);
    } finally {
      await reopened.close();
    }
  });
});
