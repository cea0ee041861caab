import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { signUp, startServer, TestServer } from '../support/server';

type User = Awaited<ReturnType<typeof signUp>>;

function allFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? allFiles(path.join(dir, d.name)) : [path.join(dir, d.name)]));
}

async function until<T>(what: string, f: () => Promise<T | null | undefined | false>): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const v = await f();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('documents from text, and the original file', () => {
  let server: TestServer;
  let owner: User;
  let member: User;
  let outsider: User;
  let ws: string;
  let tag: string;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_MAX_UPLOAD_BYTES: '5000', KB_LOG_LEVEL: 'warn' });
    owner = await signUp(server.url, 'Owner');
    member = await signUp(server.url, 'Member');
    outsider = await signUp(server.url, 'Outsider');
    ws = (await owner.api.post('/v1/workspaces', { name: 'Text docs' })).body.id;
    expect((await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: member.id, role: 'MEMBER' })).status).toBe(201);
    tag = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'notes', color: '#112233' })).body.id;
  });
  afterAll(async () => {
    await server?.stop();
  });

  const verified = (api: User['api'], id: string) =>
    until('VERIFIED', async () => {
      const r = await api.get(`/v1/workspaces/${ws}/documents/${id}`);
      return r.body.processingStatus === 'VERIFIED' || r.body.processingStatus === 'FAILED' ? r.body : null;
    });

  it('creates a Markdown document from JSON, processes it like an upload, and serves the text back as the original file', async () => {
    const word = `quillet${randomBytes(4).toString('hex')}`;
    const content = `# Harbour notes\n\nThe tide table lives in ${word}.\n\n- boats\n- dawn`;
    const r = await member.api.post(`/v1/workspaces/${ws}/documents`, { title: 'Harbour: notes/2025 "final"', content, format: 'markdown', tags: [tag], purpose: 'KNOWLEDGE' });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ title: 'Harbour: notes/2025 "final"', mimeType: 'text/markdown', purpose: 'KNOWLEDGE', processingStatus: 'PROCESSING', tags: [tag], size: Buffer.byteLength(content) });
    expect(r.body.filename).toBe('Harbour_ notes_2025 _final_.md');
    const d = await verified(member.api, r.body.id);
    expect(d.processingStatus).toBe('VERIFIED');
    expect(d.chunkCount).toBeGreaterThan(0);
    const hits = await member.api.post(`/v1/workspaces/${ws}/search`, { query: word, limit: 3 });
    expect(hits.body.results[0].documentId).toBe(r.body.id);
    // Same events as an upload: the audit trail shows a DocumentUploaded.
    const audit = await owner.api.get(`/v1/workspaces/${ws}/audit?subject=${r.body.id}&action=DocumentUploaded`);
    expect(audit.body.data).toHaveLength(1);

    const file = await fetch(`${server.url}/v1/documents/${r.body.id}/file`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(file.headers.get('content-disposition')).toBe(`attachment; filename="Harbour_ notes_2025 _final_.md"; filename*=UTF-8''Harbour_%20notes_2025%20_final_.md`);
    expect(file.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await file.text()).toBe(content);
  });

  it('plain text, the default purpose, and a non-ASCII title in a safe Content-Disposition', async () => {
    const r = await owner.api.post(`/v1/workspaces/${ws}/documents`, { title: 'Übersicht – Zähler', content: 'Zähler und Messgeräte.', format: 'text' });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ mimeType: 'text/plain', purpose: 'KNOWLEDGE', filename: 'Übersicht – Zähler.txt', tags: [] });
    const file = await fetch(`${server.url}/api/v1/documents/${r.body.id}/file`, { headers: { authorization: `Bearer ${member.token}` } });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const cd = file.headers.get('content-disposition') ?? '';
    expect(cd).toBe(`attachment; filename="_bersicht _ Z_hler.txt"; filename*=UTF-8''${encodeURIComponent('Übersicht – Zähler.txt')}`);
    expect(Buffer.from(await file.arrayBuffer()).toString('utf8')).toBe('Zähler und Messgeräte.');
  });

  it('streams an uploaded binary file back byte for byte', async () => {
    const bytes = fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'sample.pdf'));
    if (bytes.length > 5000) return; // the fixture is larger than this server's limit
    const fd = new FormData();
    fd.append('file', new Blob([new Uint8Array(bytes)]), 'sample.pdf');
    const r = await owner.api.post(`/v1/workspaces/${ws}/documents`, fd);
    expect(r.status).toBe(201);
    const file = await fetch(`${server.url}/v1/documents/${r.body.id}/file`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(file.headers.get('content-type')).toBe('application/pdf');
    expect(Buffer.from(await file.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('refuses bad bodies with the route envelope, and applies the upload limits and tag rules', async () => {
    const base = { title: 'T', content: 'x', format: 'text' };
    const cases: [unknown, number, string][] = [
      [{ ...base, format: 'html' }, 400, 'VALIDATION_ERROR'],
      [{ ...base, title: '' }, 400, 'VALIDATION_ERROR'],
      [{ ...base, content: '   ' }, 400, 'VALIDATION_ERROR'],
      [{ ...base, content: 'a\u0000b' }, 400, 'VALIDATION_ERROR'],
      [{ ...base, extra: 1 }, 400, 'VALIDATION_ERROR'],
      [{ title: 'T', format: 'text' }, 400, 'VALIDATION_ERROR'],
      [{ ...base, tags: ['not-a-uuid'] }, 400, 'VALIDATION_ERROR'],
      [{ ...base, tags: ['00000000-0000-4000-8000-000000000000'] }, 400, ''],
      [{ ...base, content: 'y'.repeat(5001) }, 400, 'FILE_TOO_LARGE'],
      [[1, 2], 400, 'VALIDATION_ERROR'],
    ];
    for (const [body, status, code] of cases) {
      const r = await member.api.post(`/v1/workspaces/${ws}/documents`, body);
      expect([JSON.stringify(body).slice(0, 40), r.status]).toEqual([JSON.stringify(body).slice(0, 40), status]);
      if (code) expect(r.body.error.code).toBe(code);
    }
    expect((await outsider.api.post(`/v1/workspaces/${ws}/documents`, base)).status).toBe(404);
    expect((await member.api.raw('POST', `/v1/workspaces/${ws}/documents`, '{"title":', { 'content-type': 'application/json' })).status).toBe(400);
    // Multipart still works, and a body of another type is still refused as before.
    expect((await member.api.raw('POST', `/v1/workspaces/${ws}/documents`, 'plain', { 'content-type': 'text/plain' })).status).toBe(400);
  });

  it('the file: membership as for reading, 404 for bad ids, after deletion, and nothing left after erasure', async () => {
    const word = `zindle${randomBytes(4).toString('hex')}`;
    const r = await owner.api.post(`/v1/workspaces/${ws}/documents`, { title: 'Gone soon', content: `Secret ${word} here.`, format: 'text' });
    expect(r.status).toBe(201);
    const id = r.body.id as string;
    expect((await outsider.api.get(`/v1/documents/${id}/file`)).status).toBe(404);
    expect((await outsider.api.get(`/v1/documents/${id}/file`)).body.error.code).toBe('DOCUMENT_NOT_FOUND');
    expect((await owner.api.get(`/v1/documents/not-an-id/file`)).status).toBe(404);
    expect((await owner.api.get(`/v1/documents/00000000-0000-4000-8000-000000000000/file`)).status).toBe(404);
    expect((await fetch(`${server.url}/v1/documents/${id}/file`)).status).toBe(401);
    expect((await member.api.get(`/v1/documents/${id}/file`)).text).toBe(`Secret ${word} here.`);
    await verified(owner.api, id);

    expect((await owner.api.delete(`/v1/workspaces/${ws}/documents/${id}`)).status).toBe(204);
    expect((await owner.api.get(`/v1/documents/${id}/file`)).status).toBe(404);
    // Erasure: the stored file is removed from the blob store (the log, index and read stores are
    // covered by erasure.test.ts, after their compaction).
    await until('file bytes gone', async () => allFiles(path.join(server.dataDir, 'blobs')).every((f) => !fs.readFileSync(f).includes(word)));
  });
});
