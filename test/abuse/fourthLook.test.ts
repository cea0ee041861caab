import fs from 'node:fs';
import path from 'node:path';
import { client, signUp, startServer, TestServer } from '../support/server';
import { base32Decode, totp } from '../../src/security/totp';

/**
 * What a fourth hostile pass found: ids in upper case refused by two routes that others accept,
 * unknown paths under the tool endpoint's prefix answered in the /v1 shape, and an invitation's
 * accept showing a workspace to someone its identity settings keep out.
 */
describe('abuse: fourth look', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'warn' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** The verification link mailed to `email` (the default mailer writes to <data dir>/outbox), used. */
  async function verifyEmail(email: string): Promise<void> {
    const dir = path.join(server.dataDir, 'outbox');
    for (let i = 0; i < 200; i++) {
      const mails = (fs.existsSync(dir) ? fs.readdirSync(dir) : []).map((f) => fs.readFileSync(path.join(dir, f), 'utf8')).filter((r) => r.includes(`To: ${email}`));
      const unQp = (raw: string) => raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
      const link = mails.map((m) => /https?:\/\/\S+\/verify-email\?token=[A-Za-z0-9%._-]+/.exec(unQp(m))?.[0]).find((l) => l !== undefined);
      if (link) {
        const token = decodeURIComponent(new URL(link).searchParams.get('token') as string);
        expect((await client(server.url).post('/v1/auth/verify-email', { token })).status).toBe(200);
        return;
      }
      await sleep(50);
    }
    throw new Error(`no mail to ${email}`);
  }

  it("revokes one's own API key and session by an upper-case id; another user's is not found either way", async () => {
    const u = await signUp(server.url, 'Upper');
    const other = await signUp(server.url, 'OtherUpper');
    const key = (await u.api.post('/v1/api-keys', { name: 'ci' })).body as { id: string; key: string };
    const theirs = (await other.api.post('/v1/api-keys', { name: 'theirs' })).body as { id: string; key: string };
    const r = await u.api.delete(`/v1/api-keys/${theirs.id.toUpperCase()}`);
    expect([r.status, r.body?.error?.code]).toEqual([404, 'API_KEY_NOT_FOUND']);
    expect((await client(server.url, theirs.key).get('/v1/auth/me')).status).toBe(200);
    expect((await u.api.delete(`/v1/api-keys/${key.id.toUpperCase()}`)).status).toBe(204);
    expect((await client(server.url, key.key).get('/v1/auth/me')).status).toBe(401);
    expect((await u.api.get('/v1/api-keys')).body.data).toEqual([]);

    // A second session of u (the first is the one u.api uses), and one of the other user.
    const second = await client(server.url).post('/v1/auth/login', { email: u.email, password: 'correct horse battery' });
    const sessions = (await u.api.get('/v1/auth/sessions')).body.data as { id: string; current: boolean }[];
    const notCurrent = sessions.find((s) => !s.current);
    expect(notCurrent).toBeDefined();
    const theirSession = ((await other.api.get('/v1/auth/sessions')).body.data as { id: string }[])[0];
    const foreign = await u.api.delete(`/v1/auth/sessions/${theirSession.id.toUpperCase()}`);
    expect([foreign.status, foreign.body?.error?.code]).toEqual([404, 'SESSION_NOT_FOUND']);
    expect((await other.api.get('/v1/auth/me')).status).toBe(200);
    expect((await u.api.delete(`/v1/auth/sessions/${notCurrent!.id.toUpperCase()}`)).status).toBe(204);
    expect((await client(server.url).post('/v1/auth/refresh', { refreshToken: second.body.refreshToken })).status).toBe(401);
    // Not an id at all: not found, as before.
    expect((await u.api.delete('/v1/api-keys/not-an-id')).status).toBe(404);
    expect((await u.api.delete('/v1/auth/sessions/not-an-id')).status).toBe(404);
  });

  it('answers every unknown path, method and malformed request under /mcp in the JSON-RPC envelope, with its status', async () => {
    const owner = await signUp(server.url, 'McpPaths');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Mcp' })).body.id as string;
    expect((await owner.api.put(`/v1/workspaces/${ws}`, { settings: { allowPublicSearchLinks: true } })).status).toBe(200);
    const token = (await owner.api.post(`/api/workspaces/${ws}/public-links`, { name: 'L', allowedTags: [] })).body.token as string;
    expect(typeof token).toBe('string');
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const cases: [string, string, string | undefined, number, number][] = [
      // method, path, body, HTTP status, JSON-RPC code
      ['POST', `/mcp/${token}/extra`, ping, 404, -32600],
      ['POST', `/api/v1/mcp/${token}/extra`, ping, 404, -32600],
      ['GET', `/mcp/${token}/tools/list`, undefined, 404, -32600],
      ['POST', '/mcp', ping, 404, -32600],
      ['POST', '/mcp/', ping, 404, -32600],
      ['POST', '/api/v1/mcp', ping, 404, -32600],
      ['POST', `/mcp/${token}/%zz`, ping, 404, -32600],
      ['POST', '/mcp/%zz', ping, 400, -32600],
      ['GET', `/mcp/${token}`, undefined, 405, -32600],
      ['PUT', `/mcp/${token}`, ping, 405, -32600],
      ['DELETE', `/api/v1/mcp/${token}`, undefined, 405, -32600],
      ['POST', `/mcp/${token}`, '{"jsonrpc": "2.0", "id": 1, "method": ', 400, -32700],
      ['POST', `/mcp/${token}`, '[]', 400, -32600],
      ['POST', `/mcp/${token}`, '"ping"', 400, -32600],
    ];
    for (const [method, p, body, status, code] of cases) {
      const r = await fetch(server.url + p, { method, headers: { 'content-type': 'application/json' }, body });
      const text = await r.text();
      const b = JSON.parse(text);
      expect([method, p, r.status, b]).toEqual([method, p, status, { jsonrpc: '2.0', id: null, error: { code, message: expect.any(String) } }]);
      // No token in any answer.
      expect(text.includes(token)).toBe(false);
    }
    // The endpoint itself still answers.
    const ok = await fetch(`${server.url}/mcp/${token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: ping });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
  });

  it("tool calls naming another tenant's document or tag reach nothing of it; ids in any case", async () => {
    const rpc = async (token: string, id: number, name: string, args: unknown) => {
      const r = await fetch(`${server.url}/mcp/${token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }) });
      return { status: r.status, body: (await r.json()) as any };
    };
    const tenant = async (name: string, text: string) => {
      const u = await signUp(server.url, name);
      const ws = (await u.api.post('/v1/workspaces', { name })).body.id as string;
      expect((await u.api.put(`/v1/workspaces/${ws}`, { settings: { allowPublicSearchLinks: true } })).status).toBe(200);
      const tag = (await u.api.post(`/v1/workspaces/${ws}/tags`, { name: 'Public', color: '#112233' })).body.id as string;
      const doc = (await u.api.post(`/v1/workspaces/${ws}/documents`, { title: `${name} notes`, content: text, format: 'text', tags: [tag] })).body.id as string;
      for (let i = 0; i < 300 && (await u.api.get(`/v1/documents/${doc}`)).body.processingStatus !== 'VERIFIED'; i++) await sleep(100);
      const link = (toolProfile: string) => u.api.post(`/api/workspaces/${ws}/public-links`, { name: toolProfile, allowedTags: [tag], toolProfile }).then((r) => r.body.token as string);
      return { tag, doc, search: await link('default'), chatgpt: await link('chatgpt') };
    };
    const a = await tenant('Alpha', 'Refunds are paid within five business days, says alpha.');
    const b = await tenant('Bravo', 'Refunds are paid within five business days, bravo secret.');
    // fetch: the other tenant's document is not there, in either case; one's own is, in either case.
    for (const id of [b.doc, b.doc.toUpperCase()]) {
      const r = await rpc(a.chatgpt, 1, 'fetch', { id });
      expect([r.status, r.body.result?.isError]).toEqual([200, true]);
      expect(JSON.stringify(r.body)).not.toContain('bravo secret');
    }
    expect(JSON.parse((await rpc(a.chatgpt, 2, 'fetch', { id: a.doc.toUpperCase() })).body.result.content[0].text).id).toBe(a.doc);
    // search: only the link's own documents; the other tenant's tag is refused, one's own tag id in upper case is taken.
    const found = await rpc(a.chatgpt, 3, 'search', { query: 'refunds paid business days' });
    expect(JSON.parse(found.body.result.content[0].text).results.map((r: { id: string }) => r.id)).toEqual([a.doc]);
    const foreignTag = await rpc(a.search, 4, 'service_search', { query: 'refunds paid', tags: [b.tag] });
    expect([foreignTag.status, foreignTag.body.error?.code, foreignTag.body.error?.data?.allowedTags]).toEqual([400, -32602, [a.tag]]);
    const ownTag = await rpc(a.search, 5, 'service_search', { query: 'refunds paid', tags: [a.tag.toUpperCase()] });
    expect(ownTag.status).toBe(200);
    const hits = JSON.parse(ownTag.body.result.content[0].text).results as { title: string; content: string }[];
    expect(hits.map((h) => h.title)).toEqual(['Alpha notes']);
    // The same link's public search takes the tag ids the same way.
    const pub = await client(server.url).post(`/public/${a.search}/search`, { query: 'refunds paid', tags: [a.tag.toUpperCase()] });
    expect([pub.status, pub.body.results?.map((r: { title: string }) => r.title)]).toEqual([200, ['Alpha notes']]);
    const pubGet = await client(server.url).get(`/public/${a.search}/search?q=refunds&tags=${a.tag.toUpperCase()}`);
    expect(pubGet.status).toBe(200);
    const pubForeign = await client(server.url).post(`/public/${a.search}/search`, { query: 'refunds paid', tags: [b.tag] });
    expect([pubForeign.status, pubForeign.body.error]).toEqual([400, 'TAG_NOT_ALLOWED']);
  });

  it("accepting an invitation to a workspace whose identity settings the invitee does not meet records the membership but shows nothing of the workspace", async () => {
    const owner = await signUp(server.url, 'Guard');
    // The owner meets both requirements before setting them.
    await verifyEmail(owner.email);
    const enrol = await owner.api.post('/v1/auth/mfa/totp', {});
    expect((await owner.api.post('/v1/auth/mfa/totp/confirm', { code: totp(base32Decode(enrol.body.secret), Date.now() / 1000) })).status).toBe(200);
    const mfaWs = (await owner.api.post('/v1/workspaces', { name: 'Secret Mfa Name' })).body.id as string;
    const mailWs = (await owner.api.post('/v1/workspaces', { name: 'Secret Mail Name' })).body.id as string;
    expect((await owner.api.put(`/v1/workspaces/${mfaWs}`, { settings: { requireMfa: true } })).status).toBe(200);
    expect((await owner.api.put(`/v1/workspaces/${mailWs}`, { settings: { requireVerifiedEmail: true } })).status).toBe(200);

    const invitee = await signUp(server.url, 'Invitee');
    const invite = async (ws: string) => (await owner.api.post(`/v1/workspaces/${ws}/invite`, { email: invitee.email, role: 'MEMBER' })).body.invitationId as string;
    const mfaInv = await invite(mfaWs);
    const mailInv = await invite(mailWs);
    // An invitation is accepted from a confirmed address only (fifth look): refused, nothing recorded.
    for (const inv of [mfaInv, mailInv]) {
      const r = await invitee.api.post(`/v1/invitations/${inv}/accept`, {});
      expect([r.status, r.body?.error?.code, r.body?.error?.details]).toEqual([403, 'EMAIL_NOT_VERIFIED', undefined]);
    }
    await verifyEmail(invitee.email);
    for (const ws of [mfaWs, mailWs]) expect(((await owner.api.get(`/v1/workspaces/${ws}/members`)).body as { userId: string }[]).map((m) => m.userId)).not.toContain(invitee.id);
    {
      const r = await invitee.api.post(`/v1/invitations/${mfaInv.toUpperCase()}/accept`, {});
      expect([r.status, r.body?.error?.code]).toEqual([403, 'MFA_ENROLMENT_REQUIRED']);
      expect(r.body.error.details).toEqual({ accepted: true, workspaceId: mfaWs });
      expect(r.text.includes('Secret Mfa Name')).toBe(false);
      // The same answer as the workspace's own routes give this user; the membership is recorded.
      const direct = await invitee.api.get(`/v1/workspaces/${mfaWs}`);
      expect([direct.status, direct.body?.error?.code]).toEqual([403, 'MFA_ENROLMENT_REQUIRED']);
      expect(((await owner.api.get(`/v1/workspaces/${mfaWs}/members`)).body as { userId: string }[]).map((m) => m.userId)).toContain(invitee.id);
      // Accepted once: not again.
      expect((await invitee.api.post(`/v1/invitations/${mfaInv}/accept`, {})).status).toBe(404);
    }
    // With the address confirmed, the workspace that requires it opens on accept.
    const mailOk = await invitee.api.post(`/v1/invitations/${mailInv}/accept`, {});
    expect([mailOk.status, mailOk.body.name]).toEqual([200, 'Secret Mail Name']);
    expect((await invitee.api.get(`/v1/workspaces/${mailWs}`)).body.name).toBe('Secret Mail Name');
    // A workspace without requirements answers its details on accept, as before.
    const open = (await owner.api.post('/v1/workspaces', { name: 'Open' })).body.id as string;
    const ok = await invitee.api.post(`/v1/invitations/${await invite(open)}/accept`, {});
    expect([ok.status, ok.body.id, ok.body.name, ok.body.role]).toEqual([200, open, 'Open', 'MEMBER']);
  });
});
