import { client, signUp, startServer, TestServer } from '../support/server';

/** Issue 13: the model is warmed at start (reported on /readyz); `local` reads an index with the local model that built it (a change of model: reembedding.test.ts). */
describe('embedding model at start-up', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  async function readyz(base: string): Promise<{ status: number; body: any }> {
    for (let i = 0; i < 300; i++) {
      const r = await client(base).get('/readyz');
      if (r.status === 200) return r;
      expect(r.body.status).toMatch(/^(warming|catching_up)$/);
      await new Promise((res) => setTimeout(res, 100));
    }
    throw new Error('never ready');
  }

  it('/readyz reports the embedding model ready once warmed up', async () => {
    server = await startServer();
    const r = await readyz(server.url);
    expect(r.body).toMatchObject({ status: 'ready', embeddings: 'ready' });
    expect(r.body.embeddingsWarmupMs).toEqual(expect.any(Number));
  });

  it('an index built by the previous default (USE-lite) keeps working after an upgrade: the default reads it with the model that built it', async () => {
    server = await startServer({ KB_EMBEDDINGS: 'use' });
    const dataDir = server.dataDir;
    const u = await signUp(server.url);
    const ws = await u.api.post('/v1/workspaces', { name: 'Before' });
    const fd = new FormData();
    fd.append('file', new Blob(['# Rudders\n\nThe rudder turns the aircraft about its vertical axis, the yaw.']), 'rudders.md');
    const doc = await u.api.post(`/v1/workspaces/${ws.body.id}/documents`, fd);
    expect(doc.status).toBe(201);
    for (let i = 0; i < 300; i++) {
      if ((await u.api.get(`/v1/documents/${doc.body.id}`)).body.processingStatus === 'VERIFIED') break;
      await new Promise((res) => setTimeout(res, 100));
    }
    await server.stop();
    server = await startServer({}, dataDir); // KB_EMBEDDINGS unset: the default
    expect(server.output()).toMatch(/built with KB_EMBEDDINGS=use/);
    const again = client(server.url);
    const login = await again.post('/v1/auth/login', { email: u.email, password: 'correct horse battery' });
    const api = client(server.url, login.body.accessToken);
    const hits = await api.post(`/v1/workspaces/${ws.body.id}/search`, { query: 'what turns the aircraft about its vertical axis' });
    expect(hits.status).toBe(200);
    expect(hits.body.results[0]?.documentId).toBe(doc.body.id);
  });
});
