import { signUp, startServer, TestServer } from '../support/server';

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
    const renamed = await setAt(tSetRenamed);
    expect(renamed.body).toMatchObject({ name: 'Set v2', isPublic: true, publicUrl: expect.stringContaining(`/s/${setId}`) });
    expect((await setAt(tDocRenamed)).body.documents[0].title).toBe('Renamed tides');
    expect((await setAt(tGone)).status).toBe(404);
    expect((await api.get(`/api/instruction-sets/${setId}`)).status).toBe(404);
    expect((await setAt(tAdded, outsider.api)).status).toBe(404);
    expect((await setAt('yesterday')).status).toBe(400);
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
});
