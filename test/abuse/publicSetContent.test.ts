import { client, startServer, TestServer } from '../support/server';
import { team, verifiedDoc, waitForStatus } from '../http/instructionSets.support';

/**
 * Finding 7: a public set serves its documents' current accepted (VERIFIED) text only. A
 * document whose text its owner removed (FAILED, NO_TEXT) contributes nothing, and the
 * management view says which entries are missing and why.
 */
describe('abuse: a public set never serves text its owner removed', () => {
  let server: TestServer;
  let t: Awaited<ReturnType<typeof team>>;
  const anon = () => client(server.url);

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    t = await team(server.url);
  }, 120_000);
  afterAll(async () => server?.stop());

  it('content replaced by whitespace: FAILED NO_TEXT, gone from /s/:id and /s/:id/raw, reported as unavailable', async () => {
    const keep = await verifiedDoc(t.owner.api, t.workspaceId, 'keep.txt', 'KEEP-MARKER stays public.');
    const secret = await verifiedDoc(t.owner.api, t.workspaceId, 'secret.txt', 'SECRET-MARKER the owner will remove.');
    const s = await t.admin.api.post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: 'Public', isPublic: true });
    for (const d of [keep, secret]) expect((await t.admin.api.post(`/api/instruction-sets/${s.body.id}/documents`, { documentId: d.id })).status).toBe(201);
    expect((await anon().get(`/s/${s.body.id}/raw`)).text).toContain('SECRET-MARKER');

    const saved = await t.owner.api.patch(`/v1/workspaces/${t.workspaceId}/documents/${secret.id}`, { content: '   \n\t\n  ' });
    expect(saved.status).toBe(200);
    const failed = await waitForStatus(t.owner.api, t.workspaceId, secret.id, 'FAILED');
    expect(failed.error.code).toBe('NO_TEXT');

    const raw = await anon().get(`/s/${s.body.id}/raw`);
    expect(raw.status).toBe(200);
    expect(raw.text).not.toContain('SECRET-MARKER');
    expect(raw.text).toBe('KEEP-MARKER stays public.');
    const html = await anon().get(`/s/${s.body.id}`);
    expect(html.status).toBe(200);
    expect(html.text).not.toContain('SECRET-MARKER');
    expect(html.text).toContain('KEEP-MARKER');

    // The management view keeps the entry (the spec's fields unchanged) and says which is not served, and why.
    const detail = await t.admin.api.get(`/api/instruction-sets/${s.body.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body.documents).toEqual([
      { documentId: keep.id, title: keep.title, sizeBytes: expect.any(Number), purpose: 'KNOWLEDGE', order: 0 },
      { documentId: secret.id, title: secret.title, sizeBytes: expect.any(Number), purpose: 'KNOWLEDGE', order: 1 },
    ]);
    expect(detail.body.unavailableDocuments).toEqual([{ documentId: secret.id, processingStatus: 'FAILED', error: { code: 'NO_TEXT', message: expect.any(String) } }]);

    // New accepted text is served again, never the removed one.
    expect((await t.owner.api.patch(`/v1/workspaces/${t.workspaceId}/documents/${secret.id}`, { content: 'RESTORED-MARKER new text.' })).status).toBe(200);
    await waitForStatus(t.owner.api, t.workspaceId, secret.id, 'VERIFIED');
    const again = (await anon().get(`/s/${s.body.id}/raw`)).text;
    expect(again.split('\n---\n')).toEqual(['KEEP-MARKER stays public.', 'RESTORED-MARKER new text.']);
    expect((await t.admin.api.get(`/api/instruction-sets/${s.body.id}`)).body.unavailableDocuments).toEqual([]);
  });
});
