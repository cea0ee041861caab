import { client, signUp, startServer, TestServer } from '../support/server';
import { upload, waitForStatus } from '../http/instructionSets.support';

/**
 * Sixth hostile look, at the surfaces programs and the public use: the tool endpoint, public
 * search links and workspace search. Assertions are about order and counts, never times.
 */

type Api = ReturnType<typeof client>;

const WORDS = 'ledger invoice audit quarterly revenue forecast compliance policy retention archive workspace tenant refund salary customer payment contract review budget'.split(' ');

/** About `bytes` of varied prose: many chunks, so a long query has work to do. */
function largeText(bytes: number, seed: number): string {
  const out: string[] = [];
  let n = 0;
  for (let i = 0; n < bytes; i++) {
    const s = `${i}. ${Array.from({ length: 12 }, (_, j) => WORDS[(seed * 7 + i * 13 + j * 5 + ((i * j) % 7)) % WORDS.length]).join(' ')}.`;
    out.push(s, i % 6 === 5 ? '\n\n' : ' ');
    n += s.length + 1;
  }
  return out.join('');
}

/** A long query of the corpus' words (every one matches most chunks), made distinct by `i`. */
const longQuery = (i: number) => `${Array.from({ length: 40 }, (_, k) => WORDS[(i + k * 3) % WORDS.length]).join(' ')} q${i}`.slice(0, 250);

/** A workspace with one document of `bytes` and an unscoped search link; answers its id and the link's token. */
async function tenant(base: string, name: string, bytes: number): Promise<{ api: Api; workspaceId: string; token: string }> {
  const u = await signUp(base, name);
  const ws = await u.api.post('/v1/workspaces', { name });
  expect(ws.status).toBe(201);
  const workspaceId = ws.body.id as string;
  const id = await upload(u.api, workspaceId, `${name}.txt`, largeText(bytes, name.length));
  await waitForStatus(u.api, workspaceId, id);
  const link = await u.api.post(`/api/workspaces/${workspaceId}/public-links`, { name });
  expect(link.status).toBe(201);
  return { api: u.api, workspaceId, token: link.body.token as string };
}

/** Searches the process has run so far (the search histogram's count). */
async function searchesRun(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = /^kb_search_duration_seconds_count\{mode="hybrid"\} (\d+)/m.exec(text);
  return m ? Number(m[1]) : 0;
}

const toolCall = (token: string, base: string, i: number, signal?: AbortSignal) =>
  fetch(`${base}/mcp/${token}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'service_search', arguments: { query: longQuery(i), limit: 20 } } }),
    ...(signal ? { signal } : {}),
  });

// The order in which turns are given (another workspace first) is tested in test/unit/searchTurns.test.ts:
// over HTTP it shows only with a corpus large enough that the index, not the main thread, is the bottleneck
// (12,700 chunks, 300 tool calls: another workspace's one search waited for all 300, 6.4 s).
describe("abuse: one tenant's flood of searches does not hold up another's", () => {
  let server: TestServer;
  let a: Awaited<ReturnType<typeof tenant>>;
  let b: Awaited<ReturnType<typeof tenant>>;

  beforeAll(async () => {
    // Rate limits off: a tenant with enough links, users or addresses has as many searches as it likes.
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    a = await tenant(server.url, 'Flooder', 4_000_000);
    b = await tenant(server.url, 'Neighbour', 2_000);
  }, 180_000);
  afterAll(async () => server?.stop());

  it('searches whose clients left while they waited are not run', async () => {
    const before = await searchesRun(server.url);
    const flood = 120;
    const controllers = Array.from({ length: flood }, () => new AbortController());
    let answered = 0;
    const calls = controllers.map((c, i) =>
      toolCall(a.token, server.url, 1000 + i, c.signal).then(
        async (r) => {
          await r.text();
          answered += 1;
        },
        () => undefined,
      ),
    );
    // Every client leaves once a few have been answered.
    while (answered < 3) await new Promise((r) => setTimeout(r, 10));
    for (const c of controllers) c.abort();
    await Promise.all(calls);
    // A later search of another workspace is answered, and by then the abandoned ones are settled.
    expect((await fetch(`${server.url}/public/${b.token}/search?q=refund`)).status).toBe(200);
    const ran = (await searchesRun(server.url)) - before;
    expect(ran).toBeLessThan(flood / 2);
  }, 180_000);
});

describe('abuse: searches waiting past their bound are refused in the envelope of their route, per workspace', () => {
  let server: TestServer;
  let a: Awaited<ReturnType<typeof tenant>>;
  let b: Awaited<ReturnType<typeof tenant>>;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_SEARCHES_WAITING_PER_WORKSPACE: '4' });
    a = await tenant(server.url, 'Busy', 1_500_000);
    b = await tenant(server.url, 'Calm', 2_000);
  }, 180_000);
  afterAll(async () => server?.stop());

  it('the tool endpoint answers a JSON-RPC error with 503 and retryAfter (never -32603 with 500); REST answers 503 SERVICE_UNAVAILABLE; other workspaces are unaffected', async () => {
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) => toolCall(a.token, server.url, i).then(async (r) => ({ status: r.status, retryAfter: r.headers.get('retry-after'), body: (await r.json()) as any }))),
    );
    const refused = answers.filter((x) => x.status !== 200);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.status).toBe(503);
      expect(r.body.jsonrpc).toBe('2.0');
      expect(typeof r.body.id).toBe('number');
      expect(r.body.error.code).not.toBe(-32603);
      expect(r.body.error.data.retryAfter).toBeGreaterThan(0);
      expect(r.retryAfter).toBe(String(r.body.error.data.retryAfter));
    }
    expect(server.output()).not.toContain('tool endpoint internal error');

    const rest = await Promise.all(
      Array.from({ length: 60 }, (_, i) => a.api.post(`/v1/workspaces/${a.workspaceId}/search`, { query: longQuery(i), limit: 20 })),
    );
    const restRefused = rest.filter((r) => r.status !== 200);
    expect(restRefused.length).toBeGreaterThan(0);
    for (const r of restRefused) {
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(r.headers.get('retry-after')).toBe('1');
    }

    // Meanwhile the other workspace's searches are never refused.
    const both = await Promise.all([
      ...Array.from({ length: 40 }, (_, i) => toolCall(a.token, server.url, i).then((r) => r.text())),
      ...Array.from({ length: 3 }, () => fetch(`${server.url}/public/${b.token}/search?q=refund`).then((r) => r.status)),
    ]);
    expect(both.slice(40)).toEqual([200, 200, 200]);
  }, 180_000);
});

describe('abuse: a link revoked while its search waits for its turn answers nothing', () => {
  let server: TestServer;
  let a: Awaited<ReturnType<typeof tenant>>;

  beforeAll(async () => {
    // One search at a time: a search of the link waits behind the ones sent before it.
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_SEARCHES_AT_ONCE: '1' });
    a = await tenant(server.url, 'Revoker', 1_500_000);
  }, 180_000);
  afterAll(async () => server?.stop());

  it('public search answers 404 and the tool endpoint 403 -32002 when the revocation was answered before them', async () => {
    let seen = 0;
    for (let attempt = 0; attempt < 6 && seen < 2; attempt++) {
      const victim = await a.api.post(`/api/workspaces/${a.workspaceId}/public-links`, { name: `victim ${attempt}` });
      expect(victim.status).toBe(201);
      const token = victim.body.token as string;
      // Searches of the same workspace queued ahead of the victim's.
      const ahead = Array.from({ length: 40 }, (_, i) => fetch(`${server.url}/public/${a.token}/search?q=${encodeURIComponent(longQuery(attempt * 100 + i))}&limit=50`).then((r) => r.text()));
      await new Promise((r) => setTimeout(r, 50));
      let step = 0;
      const viaHttp = fetch(`${server.url}/public/${token}/search?q=refund`).then(async (r) => ({ status: r.status, body: (await r.json()) as any, at: ++step }));
      const viaTool = toolCall(token, server.url, 1).then(async (r) => ({ status: r.status, body: (await r.json()) as any, at: ++step }));
      await new Promise((r) => setTimeout(r, 20));
      const del = await a.api.delete(`/api/workspaces/${a.workspaceId}/public-links/${victim.body.id}`);
      expect(del.status).toBe(204);
      const revokedAt = ++step;
      const [h, t] = await Promise.all([viaHttp, viaTool]);
      await Promise.all(ahead);
      // Only answers that came after the revocation was answered are judged.
      if (h.at > revokedAt) {
        seen += 1;
        expect(h.status).toBe(404);
        expect(h.body).toEqual({ error: 'NOT_FOUND', message: expect.any(String) });
      }
      if (t.at > revokedAt) {
        seen += 1;
        expect(t.status).toBe(403);
        expect(t.body.error.code).toBe(-32002);
        expect(t.body.result).toBeUndefined();
      }
    }
    expect(seen).toBeGreaterThan(0);
  }, 180_000);
});

describe('abuse: a member removed, or an API key revoked, while a workspace search waits for its turn gets nothing', () => {
  let server: TestServer;
  let a: Awaited<ReturnType<typeof tenant>>;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_SEARCHES_AT_ONCE: '1' });
    a = await tenant(server.url, 'Owner', 1_500_000);
  }, 180_000);
  afterAll(async () => server?.stop());

  it('answers 404 WORKSPACE_NOT_FOUND / 401 when the removal or revocation was answered before the search', async () => {
    let seen = 0;
    for (let attempt = 0; attempt < 6 && seen < 2; attempt++) {
      const member = await signUp(server.url, 'Leaver');
      expect((await a.api.post(`/v1/workspaces/${a.workspaceId}/members`, { userId: member.id, role: 'MEMBER' })).status).toBe(201);
      const key = await member.api.post('/v1/api-keys', { name: 'k' });
      expect(key.status).toBe(201);
      const byKey = client(server.url, key.body.key as string);
      const ahead = Array.from({ length: 40 }, (_, i) => a.api.post(`/v1/workspaces/${a.workspaceId}/search`, { query: longQuery(attempt * 100 + i), limit: 20 }));
      await new Promise((r) => setTimeout(r, 50));
      let step = 0;
      const viaSession = member.api.post(`/v1/workspaces/${a.workspaceId}/search`, { query: 'refund' }).then((r) => ({ r, at: ++step }));
      const viaKey = byKey.post(`/v1/workspaces/${a.workspaceId}/search`, { query: 'refund' }).then((r) => ({ r, at: ++step }));
      await new Promise((r) => setTimeout(r, 20));
      // The key is revoked, then the member removed; each answered before the searches are judged.
      expect((await member.api.delete(`/v1/api-keys/${key.body.id}`)).status).toBe(204);
      const keyRevokedAt = ++step;
      expect((await a.api.delete(`/v1/workspaces/${a.workspaceId}/members/${member.id}`)).status).toBe(204);
      const removedAt = ++step;
      const [s, k] = await Promise.all([viaSession, viaKey]);
      await Promise.all(ahead);
      if (s.at > removedAt) {
        seen += 1;
        expect(s.r.status).toBe(404);
        expect(s.r.body.error.code).toBe('WORKSPACE_NOT_FOUND');
      }
      if (k.at > keyRevokedAt) {
        seen += 1;
        expect([401, 404]).toContain(k.r.status);
        expect(k.r.body.results).toBeUndefined();
      }
    }
    expect(seen).toBeGreaterThan(0);
  }, 180_000);
});

describe('abuse: a huge array of bad items in a search body is one error, its length judged before its items', () => {
  let server: TestServer;
  let a: Awaited<ReturnType<typeof tenant>>;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    a = await tenant(server.url, 'Arrays', 2_000);
  }, 180_000);
  afterAll(async () => server?.stop());

  // 300,000 numbers where ids are expected: one io-ts error per item took the event loop ~1.2 s per request.
  const numbers = Array.from({ length: 300_000 }, () => 1);

  it('public search: tags beyond 1000 are refused by their count (POST), as workspace search refuses documentIds', async () => {
    const pub = await client(server.url).post(`/public/${a.token}/search`, { query: 'refund', tags: numbers });
    expect(pub.status).toBe(400);
    expect(pub.body.error).toBe('VALIDATION_ERROR');
    expect(pub.body.message).toContain('at most 1000');
    // One error for the array (and one for the string the union also allows), none per item.
    expect(pub.body.message.split('expected string').length - 1).toBeLessThanOrEqual(1);

    const many = await client(server.url).post(`/public/${a.token}/search`, { query: 'refund', tags: Array.from({ length: 1001 }, (_, i) => `t${i}`) });
    expect(many.status).toBe(400);
    expect(many.body.message).toContain('at most 1000');

    const ws = await a.api.post(`/v1/workspaces/${a.workspaceId}/search`, { query: 'refund', filters: { documentIds: numbers } });
    expect(ws.status).toBe(400);
    expect(ws.body.error.code).toBe('VALIDATION_ERROR');
    expect(ws.body.error.message).toContain('at most 1000');
    expect(ws.body.error.message).not.toContain('must be a UUID');

    const link = await a.api.post(`/api/workspaces/${a.workspaceId}/public-links`, { allowedTags: numbers });
    expect(link.status).toBe(400);
    expect(link.body.error.message).toContain('at most 1000');
  }, 60_000);
});

/**
 * BM25's statistics (each term's document frequency, the row count, the average length) were
 * counted over every workspace of the index, so one search told another tenant whether a word
 * occurs in anybody else's documents: its own document holding the guessed word scored
 * differently from one holding a made-up word. They are each workspace's own now
 * (lexicalIndex.ts statsOf / docFrequencyIn; test/unit/tenantStatistics.test.ts).
 */
describe("abuse: a tenant's search scores reveal nothing of other tenants' words", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
  }, 180_000);
  afterAll(async () => server?.stop());

  it("a guessed word used only in another workspace scores as a made-up one", async () => {
    const secret = 'zephyrcodename';
    const victim = await signUp(server.url, 'Victim');
    const vws = (await victim.api.post('/v1/workspaces', { name: 'Victim' })).body.id as string;
    for (let i = 0; i < 20; i++) await waitForStatus(victim.api, vws, await upload(victim.api, vws, `m${i}.txt`, `Confidential merger plan ${secret} number ${i}.`));
    const prober = await signUp(server.url, 'Prober');
    const pws = (await prober.api.post('/v1/workspaces', { name: 'Prober' })).body.id as string;
    for (const [word, name] of [
      [secret, 'guess.txt'],
      ['qwxcontrolword', 'control.txt'],
    ]) {
      await waitForStatus(prober.api, pws, await upload(prober.api, pws, name, `Notes ${word} here.`));
    }
    const top = async (q: string) => (await prober.api.post(`/v1/workspaces/${pws}/search`, { query: q, limit: 1 })).body.results[0].score as number;
    expect(await top(secret)).toBe(await top('qwxcontrolword'));
  }, 120_000);
});

describe('abuse: behind a reverse proxy, per-address limits are per client (KB_TRUST_PROXY)', () => {
  let server: TestServer;
  let a: Awaited<ReturnType<typeof tenant>>;

  beforeAll(async () => {
    // Rate limits on, as deployed; the test client stands for a proxy on loopback.
    server = await startServer({ KB_TRUST_PROXY: 'loopback' });
    a = await tenant(server.url, 'Proxied', 2_000);
  }, 180_000);
  afterAll(async () => server?.stop());

  const search = (token: string, forwardedFor: string) => fetch(`${server.url}/public/${token}/search?q=refund`, { headers: { 'x-forwarded-for': forwardedFor } });

  it("one client guessing tokens through the proxy does not lock out another client's valid link", async () => {
    let refused = false;
    for (let i = 0; i < 40 && !refused; i++) refused = (await search('0'.repeat(63) + (i % 10), '203.0.113.9')).status === 429;
    expect(refused).toBe(true); // the guesser is stopped
    expect((await search(a.token, '198.51.100.7')).status).toBe(200); // another client is not
    expect((await search(a.token, '203.0.113.9')).status).toBe(429); // the guesser, even with a valid token
  }, 60_000);
});
