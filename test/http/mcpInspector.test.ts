import path from 'node:path';
import { execFile } from 'node:child_process';
import { signUp, startServer, TestServer } from '../support/server';
import { uploadVerified } from '../support/documents';

/**
 * Interop with a client nobody here wrote: MCP Inspector's CLI mode
 * (`mcp-inspector --cli <url> --transport http --method ...`), run as its own process against
 * the real server, listing and calling the tools of a link's tool URL under both profiles.
 * @modelcontextprotocol/inspector 1.0.3 is pinned: the last line whose CLI runs on Node 20 with
 * the SDK this service already uses (its engines field says >= 22.7.5; npm only warns).
 */
const root = path.resolve(__dirname, '..', '..');
const INSPECTOR = path.join(root, 'node_modules/@modelcontextprotocol/inspector/cli/build/cli.js');
const BASE = 'https://kb.example.com';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function inspector(url: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [INSPECTOR, '--cli', url, '--transport', 'http', ...args], { cwd: root, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** The JSON the CLI prints on stdout (it writes nothing else there in --cli mode). */
function parsed(r: Run): any {
  if (r.code !== 0) throw new Error(`inspector exited with ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const toolNames = async (url: string) => (parsed(await inspector(url, ['--method', 'tools/list'])).tools as { name: string }[]).map((t) => t.name);

/** The one text item of a tool answer, parsed. */
function textOf(answer: any): any {
  expect(answer.content).toHaveLength(1);
  expect(answer.content[0].type).toBe('text');
  return JSON.parse(answer.content[0].text);
}

describe('MCP Inspector CLI (--cli --transport http) against a tool URL', () => {
  let server: TestServer;
  let refunds: string;
  let secret: string;
  let defaultUrl: string;
  let chatgptUrl: string;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'warn', KB_BASE_URL: BASE });
    const owner = await signUp(server.url, 'Inspector');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Inspector' })).body.id;
    const billing = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'Billing', color: '#112233' })).body.id;
    refunds = await uploadVerified(owner.api, ws, 'refunds.txt', 'Refunds are paid back to the original card within five business days.', [billing]);
    secret = await uploadVerified(owner.api, ws, 'secret.txt', 'Internal: VIP refunds are paid the same day.');
    const plain = await owner.api.post(`/api/workspaces/${ws}/public-links`, { allowedTags: [billing] });
    const chatgpt = await owner.api.post(`/api/workspaces/${ws}/public-links`, { allowedTags: [billing], toolProfile: 'chatgpt' });
    expect([plain.status, chatgpt.status]).toEqual([201, 201]);
    defaultUrl = `${server.url}/mcp/${plain.body.token}`;
    chatgptUrl = `${server.url}/mcp/${chatgpt.body.token}`;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('default profile: lists service_search alone and calls it, inside the link scope', async () => {
    expect(await toolNames(defaultUrl)).toEqual(['service_search']);
    const r = parsed(await inspector(defaultUrl, ['--method', 'tools/call', '--tool-name', 'service_search', '--tool-arg', 'query=how fast are refunds paid', '--tool-arg', 'limit=3']));
    expect(r.isError).toBeFalsy();
    const out = textOf(r);
    expect(out.results.length).toBeGreaterThan(0);
    expect(out.results[0].content).toContain('five business days');
    expect(JSON.stringify(out)).not.toContain('VIP');
  });

  it('chatgpt profile: lists search and fetch; search finds the document, fetch reads it whole', async () => {
    expect(await toolNames(chatgptUrl)).toEqual(['search', 'fetch']);
    const found = textOf(parsed(await inspector(chatgptUrl, ['--method', 'tools/call', '--tool-name', 'search', '--tool-arg', 'query=how fast are refunds paid'])));
    expect(found).toEqual({ results: [{ id: refunds, title: 'refunds.txt', url: `${BASE}/v1/documents/${refunds}` }] });
    const doc = textOf(parsed(await inspector(chatgptUrl, ['--method', 'tools/call', '--tool-name', 'fetch', '--tool-arg', `id=${refunds}`])));
    expect(doc).toMatchObject({ id: refunds, title: 'refunds.txt', text: expect.stringContaining('within five business days') });
  });

  it('fetch outside the scope is a tool error that reveals nothing; an unknown tool URL cannot connect', async () => {
    const r = parsed(await inspector(chatgptUrl, ['--method', 'tools/call', '--tool-name', 'fetch', '--tool-arg', `id=${secret}`]));
    expect(r.isError).toBe(true);
    expect(JSON.stringify(r)).not.toContain('VIP');
    const bad = await inspector(`${server.url}/mcp/${'0'.repeat(64)}`, ['--method', 'tools/list']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/-32002|Forbidden/);
  });
});
