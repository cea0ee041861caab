import { client, signUp, startServer, TestServer } from '../support/server';
import { cli } from '../support/cli';
import { History, makeHistory } from './analyticsCli.support';

describe('GET /v1/workspaces/:id/analytics (a projection of the log)', () => {
  let h: History;
  let server: TestServer;
  let owner: ReturnType<typeof client>;
  const from = new Date(Date.now() - 3600_000).toISOString();
  const to = new Date(Date.now() + 3 * 3600_000).toISOString();
  const url = (ws: string, extra = '') => `/v1/workspaces/${ws}/analytics?from=${from}&to=${to}&interval=hour${extra}`;

  beforeAll(async () => {
    h = await makeHistory({ keepRunning: true });
    server = h.server!;
    owner = client(server.url, h.ownerToken);
  }, 120_000);
  afterAll(async () => server?.stop());

  it('counts documents, processing, searches by channel, most-hit documents and per-link usage', async () => {
    const r = await owner.get(url(h.wsA));
    expect(r.status).toBe(200);
    const a = r.body;
    expect(a).toMatchObject({ workspaceId: h.wsA, from, to, interval: 'hour', asOf: null });
    expect(a.documents).toEqual({ added: 2, deleted: 1 });
    expect(a.processing).toMatchObject({ runs: 2, verified: 2, failed: 0, unfinished: 0, failuresByCode: [] });
    expect(a.processing.uploadToVerifiedMs.count).toBe(2);
    expect(a.processing.uploadToVerifiedMs.p50).toBeGreaterThan(0);
    expect(a.processing.uploadToVerifiedMs.p95).toBeGreaterThanOrEqual(a.processing.uploadToVerifiedMs.p50);
    expect(a.searches).toMatchObject({ searches: 4, zeroResults: 1 });
    expect(a.searches.byChannel.workspace).toMatchObject({ searches: 1, zeroResults: 0 });
    expect(a.searches.byChannel.link).toMatchObject({ searches: 2, zeroResults: 1 });
    expect(a.searches.byChannel.tool).toMatchObject({ searches: 1, zeroResults: 0 });
    expect(a.searches.latencyMs.p50).toBeGreaterThan(0);
    // Both documents were hit by the three searches that found anything (the erased one before its erasure).
    expect(a.topDocuments).toEqual(expect.arrayContaining([{ documentId: h.keptDoc, hits: 3 }, { documentId: h.erasedDoc, hits: 3 }]));
    expect(a.topDocuments).toHaveLength(2);
    expect(a.links).toEqual([
      expect.objectContaining({
        linkId: h.linkId,
        historyMode: true,
        searches: 3,
        zeroResults: 1,
        byChannel: { link: 2, tool: 1 },
        // Query text only from the history-mode store (outside the log).
        topQueries: [
          { query: 'lighthouses', count: 2 },
          { query: 'tides of the bay', count: 1 },
        ],
      }),
    ]);
    expect(a.series.length).toBe(5);
    expect(a.series.reduce((n: number, b: { link: number; tool: number; workspace: number }) => n + b.link + b.tool + b.workspace, 0)).toBe(4);

    const b = (await owner.get(url(h.wsB))).body;
    expect(b.processing).toMatchObject({ runs: 2, verified: 0, failed: 2 });
    expect(b.processing.failuresByCode).toEqual([
      { code: 'ENCRYPTED', count: 1 },
      { code: 'NO_TEXT', count: 1 },
    ]);
    expect(b.searches.searches).toBe(0);
  });

  it('keeps query text out of the log and searches out of the audit trail', async () => {
    const audit = await owner.get(`/v1/workspaces/${h.wsA}/audit?action=SearchPerformed`);
    expect(audit.status).toBe(200);
    expect(audit.body.data).toEqual([]);
    // The NDJSON export is the log: SearchPerformed events are there, their query text is not.
    const exported = await cli(h.dataDir, ['export', '--workspace', h.wsA]);
    const searches = exported.stdout.trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.type === 'SearchPerformed');
    expect(searches).toHaveLength(4);
    expect(Object.keys(searches[0].data).sort()).toEqual(['channel', 'hitDocumentIds', 'latencyMs', 'linkId', 'resultCount', 'searchId', 'workspaceId']);
    expect(JSON.stringify(searches)).not.toMatch(/lighthouses|tides|harbour/);
  });

  it('answers as of a time: before the erasure, and before the searches', async () => {
    const afterSearches = (await owner.get(url(h.wsA, `&asOf=${h.afterSearches}`))).body;
    expect(afterSearches.asOf).toBe(h.afterSearches);
    expect(afterSearches.documents).toEqual({ added: 2, deleted: 0 });
    expect(afterSearches.searches.searches).toBe(4);
    expect(afterSearches.links[0]).not.toHaveProperty('topQueries');
    const early = (await owner.get(url(h.wsA, `&asOf=${h.midpoint}`))).body;
    expect(early.documents).toEqual({ added: 1, deleted: 0 });
    expect(early.searches.searches).toBe(0);
  });

  it('refuses members, outsiders and bad parameters', async () => {
    const member = await signUp(server.url, 'Member');
    const outsider = await signUp(server.url, 'Outsider');
    expect((await owner.post(`/v1/workspaces/${h.wsA}/members`, { userId: member.id, role: 'MEMBER' })).status).toBe(201);
    expect((await member.api.get(url(h.wsA))).body.error.code).toBe('FORBIDDEN');
    expect((await outsider.api.get(url(h.wsA))).status).toBe(404);
    expect((await client(server.url).get(url(h.wsA))).status).toBe(401);
    for (const [q, status, code] of [
      [`?interval=month`, 400, 'VALIDATION_ERROR'],
      [`?from=yesterday`, 400, 'VALIDATION_ERROR'],
      [`?from=${to}&to=${from}`, 400, 'VALIDATION_ERROR'],
      [`?asOf=2026-13-45T00:00:00Z`, 400, 'VALIDATION_ERROR'],
      [`?interval=day&interval=week`, 400, 'VALIDATION_ERROR'],
      [`?colour=blue`, 400, 'VALIDATION_ERROR'],
      [`?from=2000-01-01T00:00:00Z&interval=hour`, 400, 'ANALYTICS_RANGE_TOO_LARGE'],
    ] as const) {
      const r = await owner.get(`/v1/workspaces/${h.wsA}/analytics${q}`);
      expect([q, r.status, r.body.error?.code]).toEqual([q, status, code]);
    }
    expect((await owner.get(`/v1/workspaces/${h.wsA}/analytics`)).status).toBe(200);
  });

  it('gives the same answer after `kb rebuild analytics`', async () => {
    const before = (await owner.get(url(h.wsA))).body;
    const beforeB = (await owner.get(url(h.wsB))).body;
    await server.stop();
    const r = await cli(h.dataDir, ['rebuild', 'analytics']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/rebuilt analytics: \d+ events applied/);
    server = await startServer({ KB_RATE_LIMITS: 'off' }, h.dataDir);
    owner = client(server.url, h.ownerToken);
    const after = await owner.get(url(h.wsA));
    expect(after.status).toBe(200);
    expect(after.body).toEqual(before);
    expect((await owner.get(url(h.wsB))).body).toEqual(beforeB);
  });

  it("derives a link's usage report from the log: `kb rebuild analytics` gives the same report", async () => {
    const usageUrl = `/api/workspaces/${h.wsA}/public-links/${h.linkId}/usage`;
    // A use refused after the link was found (no query) is counted as an error.
    expect((await client(server.url).get(`/s/${h.linkId}`)).status).toBe(400);
    const before = await owner.get(usageUrl);
    expect(before.status).toBe(200);
    expect(before.body.totals).toMatchObject({ requests: 4, errors: 1, byChannel: { http: 2, mcp: 1, s: 1 }, distinctClients: 1 });
    expect(before.body.totals.latencyMs.p50).toEqual(expect.any(Number));
    await server.stop();
    const r = await cli(h.dataDir, ['rebuild', 'analytics']);
    expect(r.code).toBe(0);
    server = await startServer({ KB_RATE_LIMITS: 'off' }, h.dataDir);
    owner = client(server.url, h.ownerToken);
    const after = await owner.get(usageUrl);
    expect(after.status).toBe(200);
    const { window: _w1, ...restBefore } = before.body;
    const { window: _w2, ...restAfter } = after.body;
    expect(restAfter).toEqual(restBefore);
  });
});
