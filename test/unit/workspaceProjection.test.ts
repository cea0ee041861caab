import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { ProjectionRunner } from '../../src/core/projectionRunner';
import { versionKey } from '../../src/core/projection';
import { NewEvent, RecordedEvent } from '../../src/domain/event';
import { WorkspaceEvent } from '../../src/domain/workspace/events';
import { tagsCollection, workspaceProjection } from '../../projections/workspace/workspaceProjection';
import { listTags } from '../../queries/workspace/workspaceQueries';
import { AppContext } from '../../src/app/context';

const meta = { actorId: 'u1', authMethod: 'session' as const, correlationId: 'c', occurredAt: '2024-01-01T00:00:00.000Z', schemaVersion: 1 };
const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';
const TAG = '00000000-0000-4000-8000-000000000001';

function recorded(position: number, e: WorkspaceEvent): RecordedEvent {
  return { id: randomUUID(), streamId: `workspace-${e.data.workspaceId}`, revision: position, position, type: e.type, data: e.data, metadata: meta } as RecordedEvent;
}

describe('workspace projection: tag rows are scoped by workspace', () => {
  let dir: string;
  let store: SqliteReadStore;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-wsproj-'));
    store = new SqliteReadStore(path.join(dir, 'read.db'));
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("the same tag id in two workspaces (an old log, a phantom id) never touches the other workspace's row", async () => {
    const p = workspaceProjection(store);
    await p.apply([
      recorded(1, { type: 'TagCreated', data: { workspaceId: A, tagId: TAG, name: 'Contracts', color: '#00aa00' } }),
      recorded(2, { type: 'TagCreated', data: { workspaceId: B, tagId: TAG, name: 'B tag', color: '#0000ff' } }),
      recorded(3, { type: 'TagUpdated', data: { workspaceId: B, tagId: TAG, name: 'PWNED by B', color: '#ff0000' } }),
      // An update of a tag the workspace never created (what the phantom `constructor` tag left in logs).
      recorded(4, { type: 'TagUpdated', data: { workspaceId: B, tagId: 'constructor', name: 'phantom', color: '#ff0000' } }),
    ]);
    const ctx = { readStore: store } as unknown as AppContext;
    expect(await listTags(ctx, A)).toEqual([{ id: TAG, name: 'Contracts', color: '#00aa00' }]);
    expect(await listTags(ctx, B)).toEqual([{ id: TAG, name: 'PWNED by B', color: '#ff0000' }]);
    await p.apply([recorded(5, { type: 'TagDeleted', data: { workspaceId: B, tagId: TAG } })]);
    expect(await listTags(ctx, A)).toEqual([{ id: TAG, name: 'Contracts', color: '#00aa00' }]);
    expect(await listTags(ctx, B)).toEqual([]);
  });

  it('a read model stored under the old key scheme (version 1) is rebuilt from the log when the projector starts', async () => {
    const events = new SqliteEventStore(path.join(dir, 'events.db'));
    const append = (e: WorkspaceEvent) => {
      const n: NewEvent = { id: randomUUID(), type: e.type, data: e.data, metadata: meta };
      return events.append(`workspace-${e.data.workspaceId}-${randomUUID()}`, [n], 'no_stream');
    };
    await append({ type: 'TagCreated', data: { workspaceId: A, tagId: TAG, name: 'Contracts', color: '#00aa00' } });
    // What version 1 left behind: a row keyed by the bare tag id, checkpoint at the head, no version record.
    await tagsCollection(store).put({ id: TAG, workspaceId: A, name: 'Contracts', color: '#00aa00' } as never);
    await store.setCheckpoint('workspaces', 1);
    expect(await store.getCheckpoint(versionKey('workspaces'))).toBe(0);

    const p = workspaceProjection(store);
    expect(await p.checkpoint()).toBe(0); // nothing this version can read has been applied yet
    const runner = new ProjectionRunner(events, [p]);
    await runner.start();
    expect(await runner.waitFor(1, 5000)).toBe(true);
    await runner.stop();
    const rows = await tagsCollection(store).find({});
    expect(rows).toEqual([{ id: `${A}:${TAG}`, tagId: TAG, workspaceId: A, name: 'Contracts', color: '#00aa00' }]);
    expect(await store.getCheckpoint(versionKey('workspaces'))).toBe(2);
    expect(await p.checkpoint()).toBe(1);
    await events.close();
  });
});
