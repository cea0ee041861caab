import { startServer, signUp, TestServer } from '../support/server';

type User = Awaited<ReturnType<typeof signUp>>;

async function waitUntil<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('documents in the search index', () => {
  let server: TestServer;
  let user: User;
  let ws: string;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'warn' });
    user = await signUp(server.url, 'Searcher');
    ws = (await user.api.post('/v1/workspaces', { name: 'Search' })).body.id;
  });
  afterAll(async () => {
    await server?.stop();
  });

  const search = async (query: string) => {
    const r = await user.api.post(`/v1/workspaces/${ws}/search`, { query, limit: 20 });
    expect(r.status).toBe(200);
    return r.body.results as { documentId: string; documentTitle: string; content: string }[];
  };
  const verified = (id: string) =>
    waitUntil('VERIFIED', async () => {
      const d = await user.api.get(`/v1/workspaces/${ws}/documents/${id}`);
      return d.body.processingStatus === 'VERIFIED' ? d.body : undefined;
    });

  it('a VERIFIED document is searchable; metadata, new content and deletion reach the index', async () => {
    const fd = new FormData();
    fd.append('file', new Blob(['# Zebras\n\nThe quagga zebra lived in the Karoo and was hunted to extinction.\n']), 'zebra.md');
    const up = await user.api.post(`/v1/workspaces/${ws}/documents`, fd);
    expect(up.status).toBe(201);
    const id = up.body.id as string;
    await verified(id);
    // VERIFIED means searchable: no waiting between seeing VERIFIED and searching.
    const hits = (await search('quagga Karoo')).filter((x) => x.documentId === id);
    expect(hits.length).toBeGreaterThan(0);
    expect(hits[0].content).toMatch(/quagga/);

    await user.api.put(`/v1/workspaces/${ws}/documents/${id}`, { title: 'Extinct animals' });
    expect((await search('quagga')).find((x) => x.documentId === id)?.documentTitle).toBe('Extinct animals');

    const before = (await user.api.get(`/v1/workspaces/${ws}/documents/${id}`)).body;
    const saved = await user.api.patch(`/v1/workspaces/${ws}/documents/${id}`, { content: '# Birds\n\nThe dodo of Mauritius could not fly.\n', expectedUpdatedAt: before.updatedAt });
    expect(saved.status).toBe(200);
    await verified(id);
    expect((await search('dodo Mauritius')).some((x) => x.documentId === id)).toBe(true);
    const old = (await search('quagga Karoo')).filter((x) => x.documentId === id);
    expect(old.every((x) => !/quagga/.test(x.content))).toBe(true);

    expect((await user.api.delete(`/v1/workspaces/${ws}/documents/${id}`)).status).toBe(204);
    expect((await search('dodo Mauritius')).some((x) => x.documentId === id)).toBe(false);
  });
});
