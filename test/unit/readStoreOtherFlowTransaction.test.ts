import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';

/**
 * Found by the crash torture (bench/crashTorture.ts, seed 4006): the search index projection
 * writes its `search_index_docs` rows outside any read-store transaction and then stores its
 * checkpoint in search.db. On the one SQLite connection such a write ran inside whatever
 * transaction another flow held open across an await at that moment (the erasure service's,
 * reacting to the same DocumentDeleted), so a kill -9 before that transaction's commit (or its
 * rollback) lost it while the index's checkpoint had moved past it: a deleted document's row
 * stayed in read.db, unlike a rebuild. A rollback stands in for the kill here.
 */
describe('SQLite read store: a write outside any transaction while another flow holds one open', () => {
  let dir: string;
  let store: SqliteReadStore;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-rs-flow-'));
    store = new SqliteReadStore(path.join(dir, 'read.db'));
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is not rolled back (or lost) with the other flow\'s transaction', async () => {
    const docs = store.collection<{ id: string; workspaceId: string }>('search_index_docs', [{ fields: ['workspaceId'] }]);
    await docs.put({ id: 'gone', workspaceId: 'w' });
    await docs.put({ id: 'gone-too', workspaceId: 'w2' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let opened!: () => void;
    const isOpen = new Promise<void>((r) => (opened = r));
    // Another flow: a transaction open across an await, which then fails (or the process dies).
    const other = store.transaction(async () => {
      await store.setCheckpoint('erasure', 7);
      opened();
      await gate;
      throw new Error('rolled back');
    });
    await isOpen;
    // This flow, outside any transaction: it must not join the other one.
    const writes = Promise.all([docs.delete('gone'), docs.put({ id: 'kept', workspaceId: 'w' }), store.setCheckpoint('mine', 3), docs.deleteMany({ workspaceId: 'w2' })]);
    await new Promise((r) => setTimeout(r, 20));
    release();
    await expect(other).rejects.toThrow('rolled back');
    await writes;
    expect(await docs.get('gone')).toBeNull();
    expect(await docs.get('gone-too')).toBeNull();
    expect(await docs.get('kept')).toEqual({ id: 'kept', workspaceId: 'w' });
    expect(await store.getCheckpoint('mine')).toBe(3);
    expect(await store.getCheckpoint('erasure')).toBe(0);
  });
});
