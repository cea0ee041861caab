import { client, confirmAddress, signUp, startServer, TestServer } from '../support/server';
import { base32Decode, totp } from '../../src/security/totp';

/**
 * What a third hostile pass found (after issue 13's fast paths): ways around a workspace's
 * identity settings (requireMfa, requireVerifiedEmail), which held on `/v1/workspaces/<id>/...`
 * paths written in lower case only.
 */
describe('abuse: third look', () => {
  let server: TestServer;
  beforeAll(async () => {
    // One whole-document read at a time: the others wait their turn (src/http/wholeDocumentReads.ts).
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_WHOLE_DOCUMENT_READS_AT_ONCE: '1' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("a workspace's requireMfa holds on every route reaching its data: an upper-case workspace id, and the routes by document or instruction-set id", async () => {
    const owner = await signUp(server.url, 'MfaOwner');
    await confirmAddress(server, owner.email);
    const enrol = await owner.api.post('/v1/auth/mfa/totp', {});
    expect((await owner.api.post('/v1/auth/mfa/totp/confirm', { code: totp(base32Decode(enrol.body.secret), Date.now() / 1000) })).status).toBe(200);
    const member = await signUp(server.url, 'NoMfa');
    const outsider = await signUp(server.url, 'Outsider');
    const memberKey = client(server.url, (await member.api.post('/v1/api-keys', { name: 'ci' })).body.key);
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Guarded' })).body.id as string;
    expect((await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: member.id, role: 'ADMIN' })).status).toBe(201);
    const doc = (await owner.api.post(`/v1/workspaces/${ws}/documents`, { title: 'Plans', content: '# Plans\n\nThe secret plan.', format: 'markdown' })).body.id as string;
    const set = (await owner.api.post(`/api/workspaces/${ws}/instruction-sets`, { name: 'Tone' })).body.id as string;
    // Before the setting, the member reads all of it.
    expect((await member.api.get(`/v1/documents/${doc}`)).status).toBe(200);
    expect((await owner.api.put(`/v1/workspaces/${ws}`, { settings: { requireMfa: true } })).status).toBe(200);

    const later = '2999-01-01T00:00:00Z';
    const reads = [
      `/v1/workspaces/${ws}`,
      `/v1/workspaces/${ws.toUpperCase()}`,
      `/v1/workspaces/${ws.toUpperCase()}/members`,
      `/v1/documents/${doc}`,
      `/api/v1/documents/${doc}`,
      `/v1/documents/${doc}?asOf=${later}`,
      `/v1/documents/${doc}/file`,
      `/api/instruction-sets/${set}`,
      `/api/instruction-sets/${set}?asOf=${later}`,
    ];
    for (const p of reads) {
      const r = await member.api.get(p);
      expect([p, r.status, r.body?.error?.code]).toEqual([p, 403, 'MFA_ENROLMENT_REQUIRED']);
    }
    for (const r of [
      await member.api.patch(`/api/instruction-sets/${set}`, { name: 'Renamed' }),
      await member.api.post(`/api/instruction-sets/${set}/documents`, { documentId: doc }),
      await member.api.delete(`/api/instruction-sets/${set}`),
    ]) {
      expect([r.status, r.body?.error?.code]).toEqual([403, 'MFA_ENROLMENT_REQUIRED']);
    }
    expect((await owner.api.get(`/api/instruction-sets/${set}`)).body.name).toBe('Tone');
    // API keys stay usable (README "Identity"); someone outside the workspace still learns nothing (404).
    expect((await memberKey.get(`/v1/documents/${doc}`)).status).toBe(200);
    expect((await memberKey.get(`/api/instruction-sets/${set}`)).status).toBe(200);
    for (const p of [`/v1/workspaces/${ws.toUpperCase()}`, `/v1/documents/${doc}`, `/v1/documents/${doc}/file`, `/api/instruction-sets/${set}`]) {
      expect([p, (await outsider.api.get(p)).status]).toEqual([p, 404]);
    }
  });

  it('a time that names no calendar day (February 30, April 31) is refused, not read as a day of the next month', async () => {
    const u = await signUp(server.url, 'Dates');
    const ws = (await u.api.post('/v1/workspaces', { name: 'Dates' })).body.id as string;
    const doc = (await u.api.post(`/v1/workspaces/${ws}/documents`, { title: 'D', content: 'Some text.', format: 'text' })).body.id as string;
    expect((await u.api.put(`/v1/workspaces/${ws}`, { settings: { allowPublicSearchLinks: true } })).status).toBe(200);
    for (const bad of ['2030-02-30T00:00:00Z', '2030-04-31', '2030-13-01T00:00:00Z', '2030-00-10T00:00:00Z']) {
      const q = encodeURIComponent(bad);
      for (const p of [`/v1/workspaces/${ws}/documents/${doc}?asOf=${q}`, `/v1/documents/${doc}?asOf=${q}`, `/v1/workspaces/${ws}/documents/${doc}/text?asOf=${q}`, `/v1/workspaces/${ws}/analytics?from=${q}`, `/v1/workspaces/${ws}/audit?from=${q}`]) {
        const r = await u.api.get(p);
        expect([p, r.status, r.body?.error?.code]).toEqual([p, 400, 'VALIDATION_ERROR']);
      }
      const link = await u.api.post(`/api/workspaces/${ws}/public-links`, { name: 'L', allowedTags: [], expiresAt: bad });
      expect([bad, link.status]).toEqual([bad, 400]);
    }
    // Real days still pass, leap days included.
    expect((await u.api.get(`/v1/workspaces/${ws}/analytics?from=2024-02-29T00:00:00Z&to=2024-03-01T00:00:00Z`)).status).toBe(200);
    expect((await u.api.post(`/api/workspaces/${ws}/public-links`, { name: 'L', allowedTags: [], expiresAt: '2099-02-28T12:00:00Z' })).status).toBe(201);
  });

  it('reads of a whole document take turns: many at once are all answered, clients that leave while waiting hold nobody up', async () => {
    const u = await signUp(server.url, 'Turns');
    const ws = (await u.api.post('/v1/workspaces', { name: 'Turns' })).body.id as string;
    const text = `# Turns\n\n${'A line of the document. '.repeat(2000)}`;
    const doc = (await u.api.post(`/v1/workspaces/${ws}/documents`, { title: 'Turns', content: text, format: 'markdown' })).body.id as string;
    const paths = [`/v1/workspaces/${ws}/documents/${doc}/content`, `/v1/workspaces/${ws}/documents/${doc}/text`, `/v1/documents/${doc}?asOf=2999-01-01T00:00:00Z`];
    // Some clients leave before their answer: their turn (or their place) is given up.
    const leaving = Array.from({ length: 6 }, (_, i) => {
      const abort = new AbortController();
      const r = fetch(`${server.url}${paths[i % paths.length]}`, { headers: { authorization: `Bearer ${u.token}` }, signal: abort.signal }).catch(() => 'left');
      abort.abort();
      return r;
    });
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => u.api.get(paths[i % paths.length])));
    await Promise.all(leaving);
    for (const [i, r] of answers.entries()) expect([paths[i % paths.length], r.status]).toEqual([paths[i % paths.length], 200]);
    expect(answers[0].body.content).toBe(text);
    expect(answers[2].body.id).toBe(doc);
    // And nothing is left waiting: the next read is answered too.
    expect((await u.api.get(paths[0])).status).toBe(200);
  });
});
