import fs from 'node:fs';
import path from 'node:path';
import { signUp, startServer, TestServer } from '../support/server';
import { uploadVerified } from '../support/documents';

type User = Awaited<ReturnType<typeof signUp>>;

/** GET /v1/workspaces/:id/documents/:docId/content: the editor's text and the time to send back. */
describe('the current text of a document (editor)', () => {
  let server: TestServer;
  let owner: User;
  let member: User;
  let outsider: User;
  let ws: string;
  let otherWs: string;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'warn' });
    owner = await signUp(server.url, 'Owner');
    member = await signUp(server.url, 'Member');
    outsider = await signUp(server.url, 'Outsider');
    ws = (await owner.api.post('/v1/workspaces', { name: 'Editor' })).body.id;
    otherWs = (await outsider.api.post('/v1/workspaces', { name: 'Elsewhere' })).body.id;
    expect((await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: member.id, role: 'MEMBER' })).status).toBe(201);
  });
  afterAll(async () => {
    await server?.stop();
  });

  const contentOf = (u: User, id: string, w = ws) => u.api.get(`/v1/workspaces/${w}/documents/${id}/content`);

  it('answers the uploaded text, then each auto-saved text, with the updatedAt that DOCUMENT_LOCKED compares against', async () => {
    const original = '\uFEFF# Café hours\n\nOpen at dawn.\n';
    const id = await uploadVerified(owner.api, ws, 'hours.md', original);
    const first = await contentOf(member, id);
    expect(first.status).toBe(200);
    // The BOM is dropped, as the extractor reads it.
    expect(first.body).toEqual({ content: '# Café hours\n\nOpen at dawn.\n', updatedAt: expect.any(String), format: 'markdown' });

    // Saved with that updatedAt: accepted; the route then answers the new text and time.
    const saved = await member.api.patch(`/v1/workspaces/${ws}/documents/${id}`, { content: 'Open at nine.', expectedUpdatedAt: first.body.updatedAt });
    expect(saved.status).toBe(200);
    const second = await contentOf(owner, id);
    expect(second.body).toEqual({ content: 'Open at nine.', updatedAt: saved.body.updatedAt, format: 'markdown' });
    expect(Date.parse(second.body.updatedAt)).toBeGreaterThan(Date.parse(first.body.updatedAt));

    // A stale editor is refused; the content route is how it reads what the other person saved.
    const stale = await owner.api.patch(`/v1/workspaces/${ws}/documents/${id}`, { content: 'Mine', expectedUpdatedAt: first.body.updatedAt });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('DOCUMENT_LOCKED');
    expect((await contentOf(owner, id)).body.content).toBe('Open at nine.');
    // "Keep mine": saved again with the fresh updatedAt.
    const mine = await owner.api.patch(`/v1/workspaces/${ws}/documents/${id}`, { content: 'Mine', expectedUpdatedAt: second.body.updatedAt });
    expect(mine.status).toBe(200);
    expect((await contentOf(member, id)).body).toMatchObject({ content: 'Mine', updatedAt: mine.body.updatedAt });
  });

  it('plain text answers format text; metadata changes do not move its updatedAt', async () => {
    const id = await uploadVerified(owner.api, ws, 'note.txt', 'Plain words.');
    const before = await contentOf(owner, id);
    expect(before.body).toMatchObject({ content: 'Plain words.', format: 'text' });
    expect((await owner.api.put(`/v1/workspaces/${ws}/documents/${id}`, { title: 'Renamed' })).status).toBe(200);
    expect((await contentOf(owner, id)).body.updatedAt).toBe(before.body.updatedAt);
  });

  it('refuses documents that are not text, outsiders, other workspaces, bad and unknown ids, and deleted documents', async () => {
    const fd = new FormData();
    fd.append('file', new Blob([fs.readFileSync(path.join(__dirname, '../fixtures/sample.pdf'))]), 'sample.pdf');
    const pdf = await owner.api.post(`/v1/workspaces/${ws}/documents`, fd);
    expect(pdf.status).toBe(201);
    const notText = await contentOf(owner, pdf.body.id);
    expect(notText.status).toBe(400);
    expect(notText.body.error.code).toBe('VALIDATION_ERROR');

    const id = await uploadVerified(owner.api, ws, 'secret.md', 'Only for members.');
    const outside = await contentOf(outsider, id);
    expect(outside.status).toBe(404);
    expect(outside.body.error.code).toBe('WORKSPACE_NOT_FOUND');
    const wrongWs = await contentOf(outsider, id, otherWs);
    expect(wrongWs.status).toBe(404);
    expect(wrongWs.body.error.code).toBe('DOCUMENT_NOT_FOUND');
    expect((await contentOf(owner, 'not-a-uuid')).body.error.code).toBe('DOCUMENT_NOT_FOUND');
    expect((await contentOf(owner, '00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await owner.api.get(`/v1/workspaces/${ws}/documents/${id}/content`, {})).status).toBe(200);
    expect((await fetchNoAuth(`/v1/workspaces/${ws}/documents/${id}/content`)).status).toBe(401);

    expect((await owner.api.delete(`/v1/workspaces/${ws}/documents/${id}`)).status).toBe(204);
    const gone = await contentOf(owner, id);
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('DOCUMENT_NOT_FOUND');
  });

  const fetchNoAuth = (p: string) => fetch(server.url + p);
});
