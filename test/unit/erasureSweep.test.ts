import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import { FsBlobStore } from '../../src/adapters/fs/fsBlobStore';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import type { AppContext } from '../../src/app/context';
import { erasureService } from '../../src/audit/erasureService';
import type { NewEvent } from '../../src/domain/event';

const event = (type: string, data: Record<string, unknown>): NewEvent => ({
  id: randomUUID(),
  type,
  data,
  metadata: { actorId: 'test', authMethod: 'system', correlationId: randomUUID(), occurredAt: new Date().toISOString(), schemaVersion: 1 },
});

async function until(what: string, f: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await f()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * The erasure service's sweep and a file an upload still holds (BlobStore.put): the deletion
 * waits for the upload to let go. Should the process die first (kill -9: the hold and the
 * waiting deletion are memory only), the file must still be deleted after the restart.
 */
describe('erasure sweep of a file an upload still holds', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'kb-erasure-sweep-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps the file pending until a later sweep, so a restart before the release still deletes it', async () => {
    const eventStore = new SqliteEventStore(path.join(dir, 'events.db'));
    const readStore = new SqliteReadStore(path.join(dir, 'read.db'));
    const context = (blobStore: FsBlobStore) =>
      ({ eventStore, readStore, blobStore, logger: pino({ level: 'silent' }), runner: { waitFor: async () => true } }) as unknown as AppContext;
    const pending = () => readStore.collection<{ id: string }>('erasure_pending_blobs');

    // An upload under way holds its stored file; its document is deleted meanwhile (its
    // workspace was deleted while the request was in flight).
    const before = new FsBlobStore(path.join(dir, 'blobs'));
    const { sha256, size } = await before.put(Readable.from([Buffer.from('text of a document deleted while its upload was under way')]), 1024);
    const documentId = randomUUID();
    const workspaceId = randomUUID();
    await eventStore.append(`document-${documentId}`, [event('DocumentUploaded', { documentId, workspaceId, blob: { sha256, size } })], 'no_stream');
    await eventStore.append(`document-${documentId}`, [event('DocumentDeleted', { documentId, workspaceId, blobSha256: sha256 })], 0);
    const first = erasureService(context(before), { keyStore: null });
    await first.start();
    await until('the sweep', async () => (await readStore.getCheckpoint('erasure')) === (await eventStore.headPosition()));
    await new Promise((r) => setTimeout(r, 50));
    expect(await before.exists(sha256)).toBe(true); // held: left to the release
    expect(await pending().get(sha256)).toBeTruthy();
    await first.stop();

    // kill -9 before the upload let go: a new process knows nothing of the hold.
    const after = new FsBlobStore(path.join(dir, 'blobs'));
    const second = erasureService(context(after), { keyStore: null });
    await second.start();
    await eventStore.append(`other-${randomUUID()}`, [event('SomethingElse', {})], 'no_stream'); // a batch at the head: a sweep
    await until('the file deleted', async () => !(await after.exists(sha256)));
    await until('nothing pending', async () => !(await pending().get(sha256)));
    await second.stop();
    await eventStore.close();
    await readStore.close();
  });
});
