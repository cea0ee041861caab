import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { SqliteKeyStore } from '../../src/adapters/sqlite/sqliteKeyStore';
import { EncryptingEventStore } from '../../src/adapters/encryption/encryptingEventStore';
import { registerUpcaster, upcast } from '../../src/core/upcasters';
import { schemaVersionOf } from '../../src/core/eventSchemas';
import { fold } from '../../src/core/commandHandler';
import { workspaceDecider } from '../../src/domain/workspace/decider';
import { RecordedEvent } from '../../src/domain/event';

const meta = (schemaVersion: number) => ({ actorId: 'u1', authMethod: 'session' as const, correlationId: 'c', occurredAt: '2024-01-01T00:00:00.000Z', schemaVersion });

describe('upcasters', () => {
  it('reads a stored version-1 WorkspaceCreated (no settings) as version 2 with default settings', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-up-'));
    const inner = new SqliteEventStore(path.join(dir, 'events.db'));
    const store = new EncryptingEventStore(inner, new SqliteKeyStore(path.join(dir, 'keys.db')));
    try {
      const v1 = { workspaceId: 'w1', name: 'Old', ownerId: 'u1', createdAt: '2024-01-01T00:00:00.000Z' };
      await inner.append('workspace-w1', [{ id: randomUUID(), type: 'WorkspaceCreated', data: v1, metadata: meta(1) }], 'no_stream');
      expect(schemaVersionOf('WorkspaceCreated')).toBe(2);

      const [e] = await store.readStream('workspace-w1');
      expect(e.metadata.schemaVersion).toBe(2);
      expect(e.data).toEqual({ ...v1, settings: { allowPublicSearchLinks: true, defaultDocumentPurpose: 'KNOWLEDGE' } });
      // The stored event is untouched: the log is never rewritten.
      expect((await inner.readStream('workspace-w1'))[0].data).toEqual(v1);
      // The decider folds the upcast event like a current one.
      const state = fold(workspaceDecider, [e]) as unknown as { settings?: unknown };
      expect(JSON.stringify(state)).toContain('allowPublicSearchLinks');
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('chains steps from an old version to the current one and leaves current events alone', () => {
    registerUpcaster('TestThingHappened', 1, (d) => ({ ...(d as object), b: 'default-b' }));
    registerUpcaster('TestThingHappened', 2, (d) => {
      const { a, ...rest } = d as { a: string };
      return { ...rest, renamedA: a };
    });
    expect(schemaVersionOf('TestThingHappened')).toBe(3);
    const base: RecordedEvent = { id: 'x', streamId: 's', revision: 0, position: 1, type: 'TestThingHappened', data: { a: 'A' }, metadata: meta(1) };
    expect(upcast(base).data).toEqual({ renamedA: 'A', b: 'default-b' });
    expect(upcast({ ...base, data: { a: 'A', b: 'B' }, metadata: meta(2) }).data).toEqual({ renamedA: 'A', b: 'B' });
    const current = { ...base, data: { renamedA: 'A', b: 'B' }, metadata: meta(3) };
    expect(upcast(current)).toBe(current);
  });
});
