import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import { FsBlobStore } from '../../src/adapters/fs/fsBlobStore';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { ProjectionRunner } from '../../src/core/projectionRunner';
import { documentStream } from '../../src/domain/document/events';
import { DomainError } from '../../src/domain/errors';
import { documentProjection, documentsCollection } from '../../projections/document/documentProjection';
import { workspaceProjection } from '../../projections/workspace/workspaceProjection';
import { DocumentActor } from '../../commands/document/documentCommand';
import { StoredUpload, uploadDocument } from '../../commands/document/uploadDocument';
import { SetSizeBreach, updateDocumentContent } from '../../commands/document/updateDocumentContent';
import { deleteDocument } from '../../commands/document/deleteDocument';

/** The embedded adapters on a temp dir, with the document and workspace projections following the log. */
async function embedded() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'doc-usecases-'));
  const eventStore = new SqliteEventStore(path.join(dir, 'events.db'));
  const readStore = new SqliteReadStore(path.join(dir, 'read.db'));
  const blobStore = new FsBlobStore(path.join(dir, 'blobs'));
  const runner = new ProjectionRunner(eventStore, [documentProjection(readStore), workspaceProjection(readStore)]);
  await runner.start();
  const ports = { eventStore, readStore, blobStore, runner, config: { readYourWritesMs: 5000 }, logger: pino({ level: 'silent' }) };
  const close = async () => {
    await runner.stop();
    await eventStore.close();
    await readStore.close();
    await rm(dir, { recursive: true, force: true });
  };
  return { ports, close };
}

type Ports = Awaited<ReturnType<typeof embedded>>['ports'];

const actor = (workspaceId: string): DocumentActor => ({ actorId: randomUUID(), authMethod: 'session', correlationId: randomUUID(), now: new Date(), workspaceId });

async function stored(ports: Ports, text: string, over: Partial<StoredUpload> = {}): Promise<StoredUpload> {
  const blob = await ports.blobStore.put(Readable.from([Buffer.from(text)]), 1024 * 1024);
  return { blob, kind: 'txt', mimeType: 'text/plain', filename: 'notes.txt', title: 'Notes', tags: [], ...over };
}

async function refusal(p: Promise<unknown>): Promise<DomainError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(err)}`);
  return err;
}

describe('document use cases on the embedded adapters', () => {
  let env: Awaited<ReturnType<typeof embedded>>;
  beforeEach(async () => {
    env = await embedded();
  });
  afterEach(async () => {
    await env.close();
  });

  describe('uploadDocument', () => {
    it('appends DocumentUploaded with the default purpose, and the read model has it once it returns', async () => {
      const workspaceId = randomUUID();
      const upload = await stored(env.ports, 'hello');
      const d = await uploadDocument(env.ports, { actor: actor(workspaceId), upload });
      expect(d).toMatchObject({ title: 'Notes', purpose: 'KNOWLEDGE', filename: 'notes.txt', size: 5, tags: [] });
      expect((await env.ports.eventStore.readStream(documentStream(d.id))).map((e) => e.type)).toEqual(['DocumentUploaded', 'DocumentProcessingStarted']);
      expect(await documentsCollection(env.ports.readStore).get(d.id)).toMatchObject({ workspaceId, blobSha256: upload.blob.sha256 });
    });

    it('refused for an unknown tag: nothing is appended and the stored file is removed', async () => {
      const upload = await stored(env.ports, 'refused');
      const unknownTag = randomUUID();
      const err = await refusal(uploadDocument(env.ports, { actor: actor(randomUUID()), upload: { ...upload, tags: ['not-a-uuid', unknownTag] } }));
      expect(err.code).toBe('VALIDATION_ERROR');
      expect(err.details).toEqual({ unknownTags: ['not-a-uuid', unknownTag] });
      expect(await env.ports.blobStore.exists(upload.blob.sha256)).toBe(false);
      expect(await env.ports.eventStore.readAll(0, 10)).toEqual([]);
    });

    it('refused, but another document uses the same bytes: the file stays', async () => {
      const workspaceId = randomUUID();
      await uploadDocument(env.ports, { actor: actor(workspaceId), upload: await stored(env.ports, 'shared') });
      const again = await stored(env.ports, 'shared');
      await refusal(uploadDocument(env.ports, { actor: actor(workspaceId), upload: { ...again, tags: [randomUUID()] } }));
      expect(await env.ports.blobStore.exists(again.blob.sha256)).toBe(true);
    });
  });

  describe('updateDocumentContent', () => {
    const breach: SetSizeBreach = { currentSize: 100_000, documentSize: 5_000, maxSize: 102_400, instructionSetId: randomUUID() };
    const breaching = (ports: Ports) => ({ ...ports, setSizeBreach: async () => breach });

    it('a size breach refuses with SIZE_LIMIT_EXCEEDED and appends nothing', async () => {
      const workspaceId = randomUUID();
      const d = await uploadDocument(env.ports, { actor: actor(workspaceId), upload: await stored(env.ports, 'short') });
      const err = await refusal(updateDocumentContent(breaching(env.ports), { actor: actor(workspaceId), actorRole: 'OWNER', documentId: d.id, content: 'much longer' }));
      expect(err.code).toBe('SIZE_LIMIT_EXCEEDED');
      expect(err.details).toEqual(breach);
      expect(await env.ports.eventStore.readStream(documentStream(d.id))).toHaveLength(2);
    });

    it("the document's own refusal comes before the size breach", async () => {
      const workspaceId = randomUUID();
      const d = await uploadDocument(env.ports, { actor: actor(workspaceId), upload: await stored(env.ports, '%PDF-1.4', { kind: 'pdf', mimeType: 'application/pdf', filename: 'a.pdf' }) });
      const err = await refusal(updateDocumentContent(breaching(env.ports), { actor: actor(workspaceId), actorRole: 'OWNER', documentId: d.id, content: 'text' }));
      expect(err.code).toBe('VALIDATION_ERROR');
      expect(err.message).toMatch(/Only text/);
    });

    it('without a breach, saves and starts processing again', async () => {
      const workspaceId = randomUUID();
      const d = await uploadDocument(env.ports, { actor: actor(workspaceId), upload: await stored(env.ports, 'v1') });
      const state = await updateDocumentContent({ ...env.ports, setSizeBreach: async () => null }, { actor: actor(workspaceId), actorRole: 'OWNER', documentId: d.id, content: 'v2' });
      expect(state.processingStatus).toBe('PROCESSING');
      expect((await env.ports.eventStore.readStream(documentStream(d.id))).map((e) => e.type).slice(2)).toEqual(['DocumentContentUpdated', 'DocumentProcessingStarted']);
    });
  });

  describe('deleteDocument', () => {
    it('removes the stored file once no document uses it', async () => {
      const workspaceId = randomUUID();
      const a = await uploadDocument(env.ports, { actor: actor(workspaceId), upload: await stored(env.ports, 'same') });
      const b = await uploadDocument(env.ports, { actor: actor(workspaceId), upload: await stored(env.ports, 'same') });
      await deleteDocument(env.ports, { actor: actor(workspaceId), actorRole: 'OWNER', documentId: a.id });
      expect(await env.ports.blobStore.exists(a.blob.sha256)).toBe(true);
      await deleteDocument(env.ports, { actor: actor(workspaceId), actorRole: 'OWNER', documentId: b.id });
      expect(await env.ports.blobStore.exists(b.blob.sha256)).toBe(false);
    });

    it('the same bytes being uploaded elsewhere (stored, not yet recorded) when the last document using them is deleted: the file stays for that upload', async () => {
      const a = await uploadDocument(env.ports, { actor: actor(randomUUID()), upload: await stored(env.ports, 'same bytes, two workspaces') });
      // Another workspace's upload of the same bytes has stored its file and not yet appended.
      const inFlight = await stored(env.ports, 'same bytes, two workspaces');
      await deleteDocument(env.ports, { actor: actor(a.workspaceId), actorRole: 'OWNER', documentId: a.id });
      expect(await env.ports.blobStore.exists(a.blob.sha256)).toBe(true);
      const b = await uploadDocument(env.ports, { actor: actor(randomUUID()), upload: inFlight });
      expect(await env.ports.blobStore.exists(b.blob.sha256)).toBe(true);
      // Once nobody uses it, it goes.
      await deleteDocument(env.ports, { actor: actor(b.workspaceId), actorRole: 'OWNER', documentId: b.id });
      expect(await env.ports.blobStore.exists(b.blob.sha256)).toBe(false);
    });

    it('a document deleted while its own upload still holds the file (a workspace deleted meanwhile): the file goes once the upload lets go', async () => {
      // The upload's release held back until the document is deleted (as when its workspace was
      // deleted while the request was in flight and the clean-up deleted the document).
      const releases: (() => void)[] = [];
      const store = env.ports.blobStore;
      const holding = { ...env.ports, blobStore: Object.assign(Object.create(store) as typeof store, { release: (sha: string) => releases.push(() => store.release(sha)) }) };
      const d = await uploadDocument(holding, { actor: actor(randomUUID()), upload: await stored(env.ports, 'deleted while held') });
      await deleteDocument(env.ports, { actor: actor(d.workspaceId), actorRole: 'OWNER', documentId: d.id });
      expect(await store.exists(d.blob.sha256)).toBe(true); // held: the deletion waits
      for (const r of releases) r();
      for (let i = 0; i < 50 && (await store.exists(d.blob.sha256)); i++) await new Promise((r) => setTimeout(r, 10));
      expect(await store.exists(d.blob.sha256)).toBe(false);
    });

    it('a refused upload does not remove the file of another upload of the same bytes still in flight', async () => {
      const inFlight = await stored(env.ports, 'same bytes again');
      const refused = await stored(env.ports, 'same bytes again');
      await refusal(uploadDocument(env.ports, { actor: actor(randomUUID()), upload: { ...refused, tags: [randomUUID()] } }));
      expect(await env.ports.blobStore.exists(inFlight.blob.sha256)).toBe(true);
      const d = await uploadDocument(env.ports, { actor: actor(randomUUID()), upload: inFlight });
      expect(await env.ports.blobStore.exists(d.blob.sha256)).toBe(true);
    });
  });
});
