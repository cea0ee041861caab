import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { signUp, startServer, TestServer } from '../support/server';
import { uploadVerified } from '../support/documents';


const upload = uploadVerified;

async function connect(url: string): Promise<Client> {
  const c = new Client({ name: 'sdk-test', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(url)));
  return c;
}

describe('tool endpoint with the official MCP SDK client', () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUp>>;
  let ws: string;
  let billing: string;
  let link: { id: string; token: string };
  const clients: Client[] = [];

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    owner = await signUp(server.url, 'Owner');
    ws = (await owner.api.post('/v1/workspaces', { name: 'SDK' })).body.id;
    billing = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'Billing', color: '#112233' })).body.id;
    await upload(owner.api, ws, 'refunds.txt', 'Refunds are paid back to the original card within five business days.', [billing]);
    await upload(owner.api, ws, 'secret.txt', 'Internal: VIP refunds are paid the same day.');
    link = (await owner.api.post(`/api/workspaces/${ws}/public-links`, { allowedTags: [billing] })).body;
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await server?.stop();
  });

  it('connects (initialize + initialized), reports the server and its tools capability', async () => {
    const c = await connect(`${server.url}/mcp/${link.token}`);
    clients.push(c);
    expect(c.getServerVersion()).toEqual({ name: 'knowledge-base-service', version: expect.stringMatching(/^\d+\.\d+\.\d+$/) });
    expect(c.getServerCapabilities()).toEqual({ tools: {} });
    await expect(c.ping()).resolves.toEqual({});
  });

  it('listTools shows service_search; callTool searches the link scope', async () => {
    const c = await connect(`${server.url}/mcp/${link.token}`);
    clients.push(c);
    const { tools } = await c.listTools();
    expect(tools.map((t) => t.name)).toEqual(['service_search']);
    expect(tools[0].description).toContain(`"Billing" (id ${billing})`);
    const r = await c.callTool({ name: 'service_search', arguments: { query: 'how fast are refunds paid', limit: 5, tags: ['Billing'] } });
    const content = r.content as { type: string; text: string }[];
    expect(content).toHaveLength(1);
    const out = JSON.parse(content[0].text);
    expect(out.totalCount).toBe(1);
    expect(out.results[0]).toEqual({ title: 'refunds.txt', content: expect.stringContaining('five business days'), score: expect.any(Number) });
  });

  it('invalid arguments and unknown tools fail with -32602 (HTTP 400)', async () => {
    const c = await connect(`${server.url}/mcp/${link.token}`);
    clients.push(c);
    await expect(c.callTool({ name: 'service_search', arguments: { query: 'a' } })).rejects.toThrow(/-32602/);
    await expect(c.callTool({ name: 'service_search', arguments: { query: 'refunds', limit: 50 } })).rejects.toThrow(/-32602/);
    await expect(c.callTool({ name: 'nope', arguments: { query: 'refunds' } })).rejects.toThrow(/-32602/);
    await expect(c.callTool({ name: 'service_search', arguments: { query: 'refunds', tags: ['Secret'] } })).rejects.toThrow(/-32602/);
  });

  it('an unknown or revoked token cannot connect (-32002, HTTP 403)', async () => {
    await expect(connect(`${server.url}/mcp/${'0'.repeat(64)}`)).rejects.toThrow(/403|-32002/);
    const l = (await owner.api.post(`/api/workspaces/${ws}/public-links`, {})).body;
    const c = await connect(`${server.url}/mcp/${l.token}`);
    clients.push(c);
    await owner.api.delete(`/api/workspaces/${ws}/public-links/${l.id}`);
    await expect(c.listTools()).rejects.toThrow(/403|-32002/);
  });
});
