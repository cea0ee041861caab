import { signUp, startServer, TestServer } from '../support/server';
import { verifiedDoc, waitForStatus } from './instructionSets.support';

const pause = (ms = 15) => new Promise((r) => setTimeout(r, ms));
/** A moment strictly after everything answered so far and before anything sent next. */
async function moment(): Promise<string> {
  await pause();
  const t = new Date().toISOString();
  await pause();
  return t;
}

describe('time travel (?asOf=)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('answers a document and an instruction set as they were at a past moment', async () => {
    const owner = await signUp(server.url, 'Traveller');
    const outsider = await signUp(server.url, 'Stranger');
    const api = owner.api;
    const ws = (await api.post('/v1/workspaces', { name: 'History' })).body.id as string;
    const tBefore = await moment();

    const fd = new FormData();
    fd.append('file', new Blob(['Tide tables for the harbour. High water at six, low water at noon.']), 'tides.txt');
    const up = await api.post(`/v1/workspaces/${ws}/documents`, fd);
    expect(up.status).toBe(201);
    const docId = up.body.id as string;
    const tUploaded = await moment();
    let live: { processingStatus: string; chunkCount: number } = up.body;
    for (let i = 0; i < 300 && !['VERIFIED', 'FAILED'].includes(live.processingStatus); i++) {
      await pause(200);
      live = (await api.get(`/v1/workspaces/${ws}/documents/${docId}`)).body;
    }
    expect(live.processingStatus).toBe('VERIFIED');
    const tVerified = await moment();

    const set = await api.post(`/api/workspaces/${ws}/instruction-sets`, { name: 'Set v1', description: 'first' });
    expect(set.status).toBe(201);
    const setId = set.body.id as string;
    expect((await api.post(`/api/instruction-sets/${setId}/documents`, { documentId: docId })).status).toBe(201);
    const tAdded = await moment();
    expect((await api.patch(`/api/instruction-sets/${setId}`, { name: 'Set v2', isPublic: true })).status).toBe(200);
    const tSetRenamed = await moment();
    expect((await api.put(`/v1/workspaces/${ws}/documents/${docId}`, { title: 'Renamed tides' })).status).toBe(200);
    const tDocRenamed = await moment();
    expect((await api.delete(`/api/instruction-sets/${setId}`)).status).toBe(204);
    expect((await api.delete(`/v1/workspaces/${ws}/documents/${docId}`)).status).toBe(204);
    const tGone = await moment();

    const doc = (t: string) => api.get(`/v1/workspaces/${ws}/documents/${docId}?asOf=${encodeURIComponent(t)}`);
    const before = await doc(tBefore);
    expect(before.status).toBe(404);
    expect(before.body.error.code).toBe('DOCUMENT_NOT_FOUND');
    const atUpload = await doc(tUploaded);
    expect(atUpload.status).toBe(200);
    expect(atUpload.body).toMatchObject({ id: docId, title: 'tides.txt', filename: 'tides.txt', uploadStatus: 'COMPLETED' });
    expect(['PENDING', 'PROCESSING', 'VERIFIED']).toContain(atUpload.body.processingStatus);
    const atVerified = await doc(tVerified);
    expect(atVerified.body).toMatchObject({ title: 'tides.txt', processingStatus: 'VERIFIED', chunkCount: live.chunkCount });
    expect(atVerified.body.chunkCount).toBeGreaterThan(0);
    expect(JSON.stringify(atVerified.body)).not.toContain('High water');
    expect((await doc(tDocRenamed)).body.title).toBe('Renamed tides');
    expect((await doc(tGone)).status).toBe(404);
    expect((await api.get(`/v1/workspaces/${ws}/documents/${docId}`)).status).toBe(404);
    expect((await doc('not-a-time')).status).toBe(400);
    expect((await outsider.api.get(`/v1/workspaces/${ws}/documents/${docId}?asOf=${encodeURIComponent(tVerified)}`)).status).toBe(404);

    const setAt = (t: string, who = api) => who.get(`/api/instruction-sets/${setId}?asOf=${encodeURIComponent(t)}`);
    expect((await setAt(tVerified)).status).toBe(404);
    const added = await setAt(tAdded);
    expect(added.status).toBe(200);
    expect(added.body).toMatchObject({ id: setId, name: 'Set v1', description: 'first', isPublic: false, publicUrl: null, documentCount: 1 });
    expect(added.body.documents).toEqual([{ documentId: docId, title: 'tides.txt', sizeBytes: expect.any(Number), purpose: 'KNOWLEDGE', order: 0 }]);
    expect(added.body.totalSizeBytes).toBe(added.body.documents[0].sizeBytes);
    expect(added.body.unavailableDocuments).toEqual([]);
    const renamed = await setAt(tSetRenamed);
    expect(renamed.body).toMatchObject({ name: 'Set v2', isPublic: true, publicUrl: expect.stringContaining(`/s/${setId}`) });
    expect((await setAt(tDocRenamed)).body.documents[0].title).toBe('Renamed tides');
    expect((await setAt(tGone)).status).toBe(404);
    expect((await api.get(`/api/instruction-sets/${setId}`)).status).toBe(404);
    expect((await setAt(tAdded, outsider.api)).status).toBe(404);
    expect((await setAt('yesterday')).status).toBe(400);
  });

  it('an instruction set as of a past moment says which of its documents were not served then, and why', async () => {
    const api = (await signUp(server.url, 'Curator')).api;
    const ws = (await api.post('/v1/workspaces', { name: 'Served history' })).body.id as string;
    const keep = await verifiedDoc(api, ws, 'keep.txt', 'Keep this line served.');
    const flaky = await verifiedDoc(api, ws, 'flaky.txt', 'This text will be removed, then restored.');
    const setId = (await api.post(`/api/workspaces/${ws}/instruction-sets`, { name: 'Served' })).body.id as string;
    for (const d of [keep, flaky]) expect((await api.post(`/api/instruction-sets/${setId}/documents`, { documentId: d.id })).status).toBe(201);
    const tServed = await moment();

    // The text removed: processing starts at the save (same event time), and ends FAILED NO_TEXT.
    const emptied = await api.patch(`/v1/workspaces/${ws}/documents/${flaky.id}`, { content: '   \n\t\n  ' });
    expect(emptied.status).toBe(200);
    const failed = await waitForStatus(api, ws, flaky.id, 'FAILED');
    const tFailed = await moment();
    const nowFailed = await api.get(`/api/instruction-sets/${setId}`);
    const failedEntry = { documentId: flaky.id, processingStatus: 'FAILED', error: { code: 'NO_TEXT', message: failed.error.message } };
    expect(nowFailed.body.unavailableDocuments).toEqual([failedEntry]);
    expect((await api.patch(`/v1/workspaces/${ws}/documents/${flaky.id}`, { content: 'Restored text, served again.' })).status).toBe(200);
    await waitForStatus(api, ws, flaky.id, 'VERIFIED');
    const tRestored = await moment();
    expect((await api.delete(`/v1/workspaces/${ws}/documents/${keep.id}`)).status).toBe(204);
    const tKeepGone = await moment();

    const at = async (t: string) => {
      const r = await api.get(`/api/instruction-sets/${setId}?asOf=${encodeURIComponent(t)}`);
      expect([t, r.status]).toEqual([t, 200]);
      return r.body as { documents: { documentId: string }[]; unavailableDocuments: unknown[] };
    };
    const ids = (b: { documents: { documentId: string }[] }) => b.documents.map((d) => d.documentId);
    const served = await at(tServed);
    expect(ids(served)).toEqual([keep.id, flaky.id]);
    expect(served.unavailableDocuments).toEqual([]);
    // While the emptied text was being processed: not served then, no failure yet.
    expect((await at(emptied.body.updatedAt)).unavailableDocuments).toEqual([{ documentId: flaky.id, processingStatus: 'PROCESSING' }]);
    // Once it failed: what the present answer said at that time.
    const whenFailed = await at(tFailed);
    expect(whenFailed.unavailableDocuments).toEqual([failedEntry]);
    expect(ids(whenFailed)).toEqual(ids(nowFailed.body));
    expect((await at(tRestored)).unavailableDocuments).toEqual([]);
    // A deleted document leaves the set (as it does now), so it is not listed as unavailable.
    const afterDelete = await at(tKeepGone);
    expect(ids(afterDelete)).toEqual([flaky.id]);
    expect(afterDelete.unavailableDocuments).toEqual([]);
    expect(afterDelete.unavailableDocuments).toEqual((await api.get(`/api/instruction-sets/${setId}`)).body.unavailableDocuments);
  });

  it('a document as of a past moment carries its tags as they were then; the unscoped GET answers the same', async () => {
    const owner = await signUp(server.url, 'Tagger');
    const api = owner.api;
    const ws = (await api.post('/v1/workspaces', { name: 'Tag history' })).body.id as string;
    const tag = (await api.post(`/v1/workspaces/${ws}/tags`, { name: 'alpha', color: '#aabbcc' })).body;
    const fd = new FormData();
    fd.append('file', new Blob(['Lighthouse keepers log the weather every four hours.']), 'log.txt');
    fd.append('tags', JSON.stringify([tag.id]));
    const docId = (await api.post(`/v1/workspaces/${ws}/documents`, fd)).body.id as string;
    const t1 = await moment();
    expect((await api.put(`/v1/workspaces/${ws}/tags/${tag.id}`, { name: 'beta', color: '#000000' })).status).toBe(200);
    const t2 = await moment();
    expect((await api.delete(`/v1/workspaces/${ws}/tags/${tag.id}`)).status).toBe(204);
    const at = (t: string, scoped = true) =>
      api.get(`${scoped ? `/v1/workspaces/${ws}` : '/v1'}/documents/${docId}?asOf=${encodeURIComponent(t)}`);
    expect((await at(t1)).body.tags).toEqual([{ id: tag.id, name: 'alpha', color: '#aabbcc' }]);
    expect((await at(t2)).body.tags).toEqual([{ id: tag.id, name: 'beta', color: '#000000' }]);
    expect((await at(new Date().toISOString())).body.tags).toEqual([]);
    expect((await api.get(`/v1/workspaces/${ws}/documents/${docId}`)).body.tags).toEqual([]);
    const unscoped = await at(t1, false);
    expect(unscoped.status).toBe(200);
    expect(unscoped.body).toEqual((await at(t1)).body);
    const stranger = await signUp(server.url, 'Nosy');
    expect((await stranger.api.get(`/v1/documents/${docId}?asOf=${encodeURIComponent(t1)}`)).status).toBe(404);
  });

  it('answers the text search used for a document, now and as of a past moment; erased with the document', async () => {
    const owner = await signUp(server.url, 'Reader');
    const stranger = await signUp(server.url, 'Peeker');
    const api = owner.api;
    const ws = (await api.post('/v1/workspaces', { name: 'Text history' })).body.id as string;
    const other = (await api.post('/v1/workspaces', { name: 'Elsewhere' })).body.id as string;
    const tBefore = await moment();
    const created = await api.post(`/v1/workspaces/${ws}/documents`, { title: 'Ferry', content: '# Ferry\n\nThe ferry leaves at nine.', format: 'markdown' });
    expect(created.status).toBe(201);
    const docId = created.body.id as string;
    const text = (q = '', who = api, w = ws) => who.get(`/v1/workspaces/${w}/documents/${docId}/text${q}`);
    const verified = async (): Promise<{ processingId: string; text: string }> => {
      for (let i = 0; i < 300; i++) {
        const r = await api.get(`/v1/workspaces/${ws}/documents/${docId}`);
        if (r.body.processingStatus === 'VERIFIED') return (await text()).body;
        await pause(100);
      }
      throw new Error('never VERIFIED');
    };
    const v1 = await verified();
    expect(v1.text).toContain('The ferry leaves at nine.');
    const tFirst = await moment();
    const saved = await api.patch(`/v1/workspaces/${ws}/documents/${docId}`, { content: '# Ferry\n\nThe ferry now leaves at ten.', expectedUpdatedAt: created.body.updatedAt });
    expect(saved.status).toBe(200);
    let v2 = await verified();
    for (let i = 0; i < 300 && v2.processingId === v1.processingId; i++) v2 = (await pause(100), await text()).body;
    expect(v2.text).toContain('The ferry now leaves at ten.');
    expect(v2.text).not.toContain('nine');

    const then = await text(`?asOf=${encodeURIComponent(tFirst)}`);
    expect(then.status).toBe(200);
    expect(then.body).toMatchObject({ documentId: docId, asOf: tFirst, processingId: v1.processingId, text: v1.text });
    expect(then.body.tokenCount).toBeGreaterThan(0);
    expect(then.body.sizeBytes).toBe(Buffer.byteLength(v1.text));
    expect(Date.parse(then.body.verifiedAt)).toBeLessThanOrEqual(Date.parse(tFirst));
    expect((await text(`?asOf=${encodeURIComponent(tBefore)}`)).body.error.code).toBe('DOCUMENT_NOT_FOUND');
    // Not a member, another workspace's path, bad input: the route's envelope, never the text.
    expect((await text('', stranger.api)).status).toBe(404);
    expect((await text('', api, other)).body.error.code).toBe('DOCUMENT_NOT_FOUND');
    expect((await text('?asOf=tomorrow')).status).toBe(400);
    expect((await text('?since=2020-01-01')).body.error.code).toBe('VALIDATION_ERROR');

    // Deleted: gone now; before the deletion the metadata history stays but the text was erased with the key.
    expect((await api.delete(`/v1/workspaces/${ws}/documents/${docId}`)).status).toBe(204);
    expect((await text()).status).toBe(404);
    const erased = await text(`?asOf=${encodeURIComponent(tFirst)}`);
    expect(erased.status).toBe(410);
    expect(erased.body.error.code).toBe('DOCUMENT_TEXT_ERASED');
    expect(JSON.stringify(erased.body)).not.toContain('ferry');
    expect((await api.get(`/v1/workspaces/${ws}/documents/${docId}?asOf=${encodeURIComponent(tFirst)}`)).body.title).toBe('Ferry');
  });

  it('a document with no VERIFIED run has no text', async () => {
    const api = (await signUp(server.url, 'Early')).api;
    const ws = (await api.post('/v1/workspaces', { name: 'Early' })).body.id as string;
    const fd = new FormData();
    fd.append('file', new Blob(['%PDF-1.4 this is not really a PDF']), 'broken.pdf');
    const up = await api.post(`/v1/workspaces/${ws}/documents`, fd);
    expect(up.status).toBe(201);
    let status = '';
    for (let i = 0; i < 300 && status !== 'FAILED'; i++) {
      await pause(100);
      status = (await api.get(`/v1/workspaces/${ws}/documents/${up.body.id}`)).body.processingStatus;
    }
    expect(status).toBe('FAILED');
    const r = await api.get(`/v1/workspaces/${ws}/documents/${up.body.id}/text`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ documentId: up.body.id, asOf: null, processingId: null, verifiedAt: null, tokenCount: 0, sizeBytes: 0, text: null });
  });
});
