import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { signUp, startServer, TestServer } from '../support/server';
import { uploadVerified } from '../support/documents';

const BASE = 'https://kb.example.com';

async function connect(url: string): Promise<Client> {
  const c = new Client({ name: 'chatgpt-profile-test', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(url)));
  return c;
}

/** The one text item of a tool answer, parsed (OpenAI: exactly one content item of type text holding JSON). */
function json(r: Awaited<ReturnType<Client['callTool']>>): any {
  const content = r.content as { type: string; text: string }[];
  expect(content).toHaveLength(1);
  expect(content[0].type).toBe('text');
  const parsed = JSON.parse(content[0].text);
  expect(r.structuredContent).toEqual(parsed);
  return parsed;
}

describe('tool profile "chatgpt": search and fetch with the official MCP SDK client', () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUp>>;
  let ws: string;
  let billing: string;
  let refunds: string;
  let secret: string;
  let link: { id: string; token: string; toolProfile?: string };
  const clients: Client[] = [];
  const open = async (token: string) => {
    const c = await connect(`${server.url}/mcp/${token}`);
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_MCP_FETCH_MAX_CHARS: '500', KB_LOG_LEVEL: 'warn', KB_BASE_URL: BASE });
    owner = await signUp(server.url, 'Owner');
    ws = (await owner.api.post('/v1/workspaces', { name: 'ChatGPT' })).body.id;
    billing = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'Billing', color: '#112233' })).body.id;
    refunds = await uploadVerified(owner.api, ws, 'refunds.txt', 'Refunds are paid back to the original card within five business days.', [billing]);
    secret = await uploadVerified(owner.api, ws, 'secret.txt', 'Internal: VIP refunds are paid the same day.');
    const r = await owner.api.post(`/api/workspaces/${ws}/public-links`, { allowedTags: [billing], toolProfile: 'chatgpt' });
    expect(r.status).toBe(201);
    link = r.body;
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await server?.stop();
  });

  it('the link shows its profile; a bad profile is a 400; PATCH switches it', async () => {
    expect(link.toolProfile).toBe('chatgpt');
    const bad = await owner.api.post(`/api/workspaces/${ws}/public-links`, { toolProfile: 'gpt' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');
    const other = (await owner.api.post(`/api/workspaces/${ws}/public-links`, {})).body;
    expect(other.toolProfile).toBeUndefined(); // the default: service_search
    const patched = await owner.api.patch(`/api/workspaces/${ws}/public-links/${other.id}`, { toolProfile: 'chatgpt' });
    expect(patched.body.toolProfile).toBe('chatgpt');
    const c = await open(other.token);
    expect((await c.listTools()).tools.map((t) => t.name)).toEqual(['search', 'fetch']);
    await owner.api.patch(`/api/workspaces/${ws}/public-links/${other.id}`, { toolProfile: 'default' });
    const d = await open(other.token);
    expect((await d.listTools()).tools.map((t) => t.name)).toEqual(['service_search']);
  });

  it('lists exactly search and fetch, each taking one string', async () => {
    const c = await open(link.token);
    const { tools } = await c.listTools();
    expect(tools.map((t) => t.name)).toEqual(['search', 'fetch']);
    expect(tools[0].inputSchema).toMatchObject({ type: 'object', properties: { query: { type: 'string' } }, required: ['query'] });
    expect(tools[1].inputSchema).toMatchObject({ type: 'object', properties: { id: { type: 'string' } }, required: ['id'] });
    expect(tools[0].description).toContain('"Billing"');
  });

  it('search answers {results: [{id, title, url}]} inside the link scope only', async () => {
    const c = await open(link.token);
    const out = json(await c.callTool({ name: 'search', arguments: { query: 'how fast are refunds paid' } }));
    expect(out).toEqual({ results: [{ id: refunds, title: 'refunds.txt', url: `${BASE}/v1/documents/${refunds}` }] });
    expect(JSON.stringify(out)).not.toContain(secret);
  });

  it('fetch answers {id, title, text, url, metadata} with the text, bounded; outside the scope it reveals nothing', async () => {
    const c = await open(link.token);
    const doc = json(await c.callTool({ name: 'fetch', arguments: { id: refunds } }));
    expect(doc).toEqual({
      id: refunds,
      title: 'refunds.txt',
      text: expect.stringContaining('within five business days'),
      url: `${BASE}/v1/documents/${refunds}`,
      metadata: { mimeType: 'text/plain', updatedAt: expect.any(String), truncated: false, tags: [billing] },
    });
    for (const id of [secret, '00000000-0000-4000-8000-000000000000', 'not-an-id']) {
      const r = await c.callTool({ name: 'fetch', arguments: { id } });
      expect(r.isError).toBe(true);
      expect(JSON.stringify(r)).not.toContain('VIP');
    }
  });

  it('long text is cut to KB_MCP_FETCH_MAX_CHARS and says so', async () => {
    const long = Array.from({ length: 60 }, (_, i) => `Billing rule ${i}: invoices are due in thirty days.`).join('\n');
    const id = await uploadVerified(owner.api, ws, 'long.txt', long, [billing]);
    const c = await open(link.token);
    const doc = json(await c.callTool({ name: 'fetch', arguments: { id } }));
    expect(doc.text.length).toBe(500);
    expect(doc.metadata.truncated).toBe(true);
  });

  it('bad arguments and other tools fail with -32602', async () => {
    const c = await open(link.token);
    await expect(c.callTool({ name: 'search', arguments: { query: 'a' } })).rejects.toThrow(/-32602/);
    await expect(c.callTool({ name: 'search', arguments: {} })).rejects.toThrow(/-32602/);
    await expect(c.callTool({ name: 'fetch', arguments: { id: 5 } })).rejects.toThrow(/-32602/);
    await expect(c.callTool({ name: 'service_search', arguments: { query: 'refunds' } })).rejects.toThrow(/-32602/);
  });

  it('a revoked link cannot be used, whatever its profile', async () => {
    expect((await owner.api.delete(`/api/workspaces/${ws}/public-links/${link.id}`)).status).toBeLessThan(300);
    await expect(connect(`${server.url}/mcp/${link.token}`)).rejects.toThrow(/403|-32002/);
  });
});
