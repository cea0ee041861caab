import fs from 'node:fs';
import path from 'node:path';
import { startServer, signUp, client, TestServer } from '../support/server';

const fixture = (name: string) => path.join(__dirname, '..', 'fixtures', name);

type Api = ReturnType<typeof client>;

function form(file: Buffer | string, filename: string, fields: Record<string, string | string[]> = {}): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) for (const x of Array.isArray(v) ? v : [v]) fd.append(k, x);
  const bytes = typeof file === 'string' ? fs.readFileSync(fixture(file)) : file;
  fd.append('file', new Blob([new Uint8Array(bytes)]), filename);
  return fd;
}

async function upload(api: Api, ws: string, file: Buffer | string, filename?: string, fields: Record<string, string | string[]> = {}) {
  return api.post(`/v1/workspaces/${ws}/documents`, form(file, filename ?? (typeof file === 'string' ? file : 'file.txt'), fields));
}

/** Poll until the document leaves PROCESSING (bounded: 60 s). */
async function settled(api: Api, ws: string, id: string) {
  for (let i = 0; i < 300; i++) {
    const r = await api.get(`/v1/workspaces/${ws}/documents/${id}`);
    if (r.status === 200 && r.body.processingStatus !== 'PROCESSING' && r.body.processingStatus !== 'PENDING') return r.body;
    await new Promise((res) => setTimeout(res, 200));
  }
  throw new Error(`document ${id} still processing after 60 s`);
}

describe('documents', () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<typeof signUp>>;
  let member: Awaited<ReturnType<typeof signUp>>;
  let outsider: Awaited<ReturnType<typeof signUp>>;
  let ws: string;
  let tagA: string;
  let tagB: string;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_MAX_UPLOAD_BYTES: '20000', KB_LOG_LEVEL: 'warn' });
    owner = await signUp(server.url, 'Owner');
    member = await signUp(server.url, 'Member');
    outsider = await signUp(server.url, 'Outsider');
    ws = (await owner.api.post('/v1/workspaces', { name: 'Docs' })).body.id;
    expect((await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: member.id, role: 'MEMBER' })).status).toBe(201);
    tagA = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'alpha', color: '#112233' })).body.id;
    tagB = (await owner.api.post(`/v1/workspaces/${ws}/tags`, { name: 'beta', color: '#445566' })).body.id;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('uploads each supported type and processes it to VERIFIED with chunks', async () => {
    const files = ['sample.pdf', 'sample.docx', 'sample.doc', 'sample.md', 'sample.txt'];
    const created = [];
    for (const f of files) {
      const r = await upload(member.api, ws, f);
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({ title: f, filename: f, purpose: 'KNOWLEDGE', uploadStatus: 'COMPLETED', processingStatus: 'PROCESSING', size: fs.statSync(fixture(f)).size });
      expect(typeof r.body.id).toBe('string');
      expect(typeof r.body.mimeType).toBe('string');
      expect(Number.isNaN(Date.parse(r.body.createdAt))).toBe(false);
      created.push(r.body);
    }
    expect(created.map((c) => c.mimeType)).toEqual([
      'application/pdf',
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      'application/msword',
      'text/markdown',
      'text/plain',
    ]);
    for (const c of created) {
      const d = await settled(member.api, ws, c.id);
      expect({ file: c.filename, status: d.processingStatus, error: d.error }).toEqual({ file: c.filename, status: 'VERIFIED', error: undefined });
      expect(d.chunkCount).toBeGreaterThanOrEqual(1);
      expect(d.chunkCount).toBeLessThan(50);
      expect(d.tokenCount).toBeGreaterThan(10);
    }
  });

  it.each([
    ['truncated.pdf', 'CORRUPT'],
    ['encrypted.pdf', 'ENCRYPTED'],
    ['scanned.pdf', 'NO_TEXT'],
    ['empty.txt', 'NO_TEXT'],
  ])('%s ends FAILED with %s', async (file, code) => {
    const r = await upload(member.api, ws, file);
    expect(r.status).toBe(201);
    const d = await settled(member.api, ws, r.body.id);
    expect(d.processingStatus).toBe('FAILED');
    expect(d.error.code).toBe(code);
    expect(d.error.message.length).toBeGreaterThan(5);
    expect(d.chunkCount).toBe(0);
  });

  it('refuses wrong types and files over the limit with 400, and answers again afterwards', async () => {
    const exe = await upload(member.api, ws, Buffer.from('MZ\x90\x00binary'), 'tool.exe');
    expect(exe.status).toBe(400);
    expect(exe.body.error.code).toBe('INVALID_FILE_TYPE');
    const fakePdf = await upload(member.api, ws, Buffer.from('just text, not a pdf'), 'fake.pdf');
    expect(fakePdf.status).toBe(400);
    expect(fakePdf.body.error.code).toBe('INVALID_FILE_TYPE');
    // Random bytes named .pdf are refused at the door (magic bytes), never processed.
    const random = await upload(member.api, ws, 'random.pdf');
    expect(random.status).toBe(400);
    expect(random.body.error.code).toBe('INVALID_FILE_TYPE');
    const notWord = await upload(member.api, ws, 'not-word.docx');
    expect(notWord.status).toBe(400);
    expect(notWord.body.error.code).toBe('INVALID_FILE_TYPE');
    const big = await upload(member.api, ws, Buffer.alloc(30000, 'a'), 'big.txt');
    expect(big.status).toBe(400);
    expect(big.body.error.code).toBe('FILE_TOO_LARGE');
    const noFile = await member.api.post(`/v1/workspaces/${ws}/documents`, { title: 'x' });
    expect(noFile.status).toBe(400);
    expect(noFile.body.error.code).toBe('VALIDATION_ERROR');
    const badTag = await upload(member.api, ws, 'sample.txt', 'sample.txt', { tags: JSON.stringify(['00000000-0000-4000-8000-000000000000']) });
    expect(badTag.status).toBe(400);
    expect(badTag.body.error.code).toBe('VALIDATION_ERROR');
    const badPurpose = await upload(member.api, ws, 'sample.txt', 'sample.txt', { purpose: 'OTHER' });
    expect(badPurpose.status).toBe(400);
    expect((await upload(member.api, ws, 'sample.txt', 'ok.txt')).status).toBe(201);
    expect((await outsider.api.post(`/v1/workspaces/${ws}/documents`, form('sample.txt', 'sample.txt'))).status).toBe(404);
  });

  it('takes title, purpose and tags (repeated or JSON), and lists with filters and pagination', async () => {
    const ws2 = (await owner.api.post('/v1/workspaces', { name: 'List' })).body.id;
    const t1 = (await owner.api.post(`/v1/workspaces/${ws2}/tags`, { name: 'one', color: '#000000' })).body.id;
    const t2 = (await owner.api.post(`/v1/workspaces/${ws2}/tags`, { name: 'two', color: '#ffffff' })).body.id;
    const a = await upload(owner.api, ws2, 'sample.md', 'a.md', { title: 'Alpha Guide', purpose: 'INSTRUCTION', tags: [t1, t2] });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ title: 'Alpha Guide', purpose: 'INSTRUCTION', tags: [t1, t2] });
    const b = await upload(owner.api, ws2, 'sample.txt', 'b.txt', { title: 'beta notes', tags: JSON.stringify([t2]) });
    expect(b.body.tags).toEqual([t2]);
    const c = await upload(owner.api, ws2, 'empty.txt', 'c.txt');
    await settled(owner.api, ws2, a.body.id);
    await settled(owner.api, ws2, b.body.id);
    await settled(owner.api, ws2, c.body.id);

    const all = await owner.api.get(`/v1/workspaces/${ws2}/documents`);
    expect(all.status).toBe(200);
    expect(all.body.pagination).toEqual({ page: 1, limit: 20, total: 3, pages: 1 });
    expect(Object.keys(all.body.data[0]).sort()).toEqual(['createdAt', 'id', 'processingStatus', 'purpose', 'tags', 'title', 'updatedAt']);
    const ids = (r: { body: { data: { id: string }[] } }) => r.body.data.map((d) => d.id).sort();
    expect(ids(await owner.api.get(`/v1/workspaces/${ws2}/documents?status=FAILED`))).toEqual([c.body.id]);
    expect(ids(await owner.api.get(`/v1/workspaces/${ws2}/documents?purpose=INSTRUCTION`))).toEqual([a.body.id]);
    expect(ids(await owner.api.get(`/v1/workspaces/${ws2}/documents?tags=${t1}`))).toEqual([a.body.id]);
    expect(ids(await owner.api.get(`/v1/workspaces/${ws2}/documents?tags=${t1},${t2}`))).toEqual([a.body.id, b.body.id].sort());
    expect(ids(await owner.api.get(`/v1/workspaces/${ws2}/documents?search=ALPHA`))).toEqual([a.body.id]);
    const p2 = await owner.api.get(`/v1/workspaces/${ws2}/documents?page=2&limit=2`);
    expect(p2.body.pagination).toEqual({ page: 2, limit: 2, total: 3, pages: 2 });
    expect(p2.body.data).toHaveLength(1);
    for (const bad of ['limit=0', 'limit=101', 'page=0', 'page=x', 'status=DONE', 'purpose=x']) {
      const r = await owner.api.get(`/v1/workspaces/${ws2}/documents?${bad}`);
      expect({ bad, status: r.status, code: r.body.error?.code }).toEqual({ bad, status: 400, code: 'VALIDATION_ERROR' });
    }
    const ws3 = (await owner.api.post('/v1/workspaces', { name: 'Instr default' })).body.id;
    await owner.api.put(`/v1/workspaces/${ws3}`, { settings: { defaultDocumentPurpose: 'INSTRUCTION' } });
    expect((await upload(owner.api, ws3, 'sample.txt')).body.purpose).toBe('INSTRUCTION');
    // Workspace document count sees them.
    expect((await owner.api.get(`/v1/workspaces/${ws2}`)).body.documentCount).toBe(3);

    // Deleting a tag removes it from documents.
    expect((await owner.api.delete(`/v1/workspaces/${ws2}/tags/${t2}`)).status).toBe(204);
    const got = await owner.api.get(`/v1/workspaces/${ws2}/documents/${a.body.id}`);
    expect(got.body.tags).toEqual([{ id: t1, name: 'one', color: '#000000' }]);
  });

  it('gets a document (scoped and unscoped), updates metadata, and hides it from non-members', async () => {
    const up = await upload(member.api, ws, 'sample.md', 'guide.md', { tags: tagA });
    const d = await settled(member.api, ws, up.body.id);
    expect(d).toMatchObject({ id: up.body.id, title: 'guide.md', filename: 'guide.md', mimeType: 'text/markdown', uploadStatus: 'COMPLETED', processingStatus: 'VERIFIED', purpose: 'KNOWLEDGE' });
    expect(d.tags).toEqual([{ id: tagA, name: 'alpha', color: '#112233' }]);
    const unscoped = await member.api.get(`/v1/documents/${up.body.id}`);
    expect(unscoped.status).toBe(200);
    expect(unscoped.body).toEqual(d);
    expect((await outsider.api.get(`/v1/documents/${up.body.id}`)).status).toBe(404);
    expect((await outsider.api.get(`/v1/workspaces/${ws}/documents/${up.body.id}`)).status).toBe(404);
    for (const bad of ['nope', '12345', '00000000-0000-4000-8000-000000000000']) {
      const r = await member.api.get(`/v1/workspaces/${ws}/documents/${bad}`);
      expect({ bad, status: r.status, code: r.body.error.code }).toEqual({ bad, status: 404, code: 'DOCUMENT_NOT_FOUND' });
      expect((await member.api.get(`/v1/documents/${bad}`)).status).toBe(404);
    }

    const put = await member.api.put(`/v1/workspaces/${ws}/documents/${up.body.id}`, { title: 'Renamed', purpose: 'INSTRUCTION', tags: [tagB] });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ title: 'Renamed', purpose: 'INSTRUCTION', tags: [{ id: tagB, name: 'beta', color: '#445566' }], processingStatus: 'VERIFIED' });
    const badTag = await member.api.put(`/v1/workspaces/${ws}/documents/${up.body.id}`, { tags: ['not-a-tag'] });
    expect(badTag.status).toBe(400);
    expect(badTag.body.error.code).toBe('VALIDATION_ERROR');
    expect((await member.api.put(`/v1/workspaces/${ws}/documents/${up.body.id}`, { title: '' })).status).toBe(400);
  });

  it('auto-saves text content, re-processes it to VERIFIED with the new chunks, and detects stale saves', async () => {
    const up = await upload(member.api, ws, 'sample.txt', 'notes.txt');
    const before = await settled(member.api, ws, up.body.id);
    expect(before.processingStatus).toBe('VERIFIED');
    const para = 'Retrieval needs stable chunk boundaries and page numbers. '.repeat(30);
    const content = Array.from({ length: 12 }, (_, i) => `Paragraph ${i}. ${para}`).join('\n\n');
    const saved = await member.api.patch(`/v1/workspaces/${ws}/documents/${up.body.id}`, { content, expectedUpdatedAt: before.updatedAt });
    expect(saved.status).toBe(200);
    expect(saved.body.processingStatus).toBe('PROCESSING');
    const after = await settled(member.api, ws, up.body.id);
    expect(after.processingStatus).toBe('VERIFIED');
    expect(after.chunkCount).toBeGreaterThan(before.chunkCount);
    expect(after.size).toBe(Buffer.byteLength(content));

    // A save based on the text before the last save is refused.
    const stale = await member.api.patch(`/v1/workspaces/${ws}/documents/${up.body.id}`, { content: 'old view', expectedUpdatedAt: before.updatedAt });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('DOCUMENT_LOCKED');
    // A PDF cannot be edited as text.
    const pdf = await upload(member.api, ws, 'sample.pdf');
    const pdfPatch = await member.api.patch(`/v1/workspaces/${ws}/documents/${pdf.body.id}`, { content: 'x' });
    expect(pdfPatch.status).toBe(400);
    expect(pdfPatch.body.error.code).toBe('VALIDATION_ERROR');
    expect((await member.api.patch(`/v1/workspaces/${ws}/documents/${up.body.id}`, { nope: 1 })).status).toBe(400);
  });

  it('reprocesses on request', async () => {
    const up = await upload(member.api, ws, 'sample.docx');
    const first = await settled(member.api, ws, up.body.id);
    const r = await member.api.post(`/v1/workspaces/${ws}/documents/${up.body.id}/process`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ id: up.body.id, processingStatus: 'PROCESSING', message: 'Document queued for reprocessing' });
    const d = await settled(member.api, ws, up.body.id);
    expect(d.processingStatus).toBe('VERIFIED');
    expect(d.chunkCount).toBe(first.chunkCount);
    expect((await member.api.post(`/v1/workspaces/${ws}/documents/00000000-0000-4000-8000-000000000000/process`)).status).toBe(404);
  });

  it('deletes: members their own uploads only, admins and owners any; gone from list, get and search', async () => {
    const mine = await upload(member.api, ws, 'sample.md', 'mine.md');
    const owners = await upload(owner.api, ws, 'sample.txt', 'owners.txt');
    await settled(member.api, ws, mine.body.id);
    await settled(member.api, ws, owners.body.id);
    const forbidden = await member.api.delete(`/v1/workspaces/${ws}/documents/${owners.body.id}`);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error.code).toBe('FORBIDDEN');
    expect((await member.api.delete(`/v1/workspaces/${ws}/documents/${mine.body.id}`)).status).toBe(204);
    expect((await owner.api.delete(`/v1/workspaces/${ws}/documents/${owners.body.id}`)).status).toBe(204);
    for (const id of [mine.body.id, owners.body.id]) {
      expect((await member.api.get(`/v1/workspaces/${ws}/documents/${id}`)).status).toBe(404);
      expect((await member.api.get(`/v1/documents/${id}`)).status).toBe(404);
      expect((await member.api.delete(`/v1/workspaces/${ws}/documents/${id}`)).status).toBe(404);
    }
    const list = await member.api.get(`/v1/workspaces/${ws}/documents?limit=100`);
    expect(list.body.data.map((d: { id: string }) => d.id)).not.toContain(mine.body.id);
  });
});

describe('documents: crash safety', () => {
  it('finishes a document left PROCESSING by a kill -9, after a restart on the same data dir', async () => {
    let server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'warn' });
    try {
      const user = await signUp(server.url, 'Crash');
      const ws = (await user.api.post('/v1/workspaces', { name: 'Crash' })).body.id;
      const text = Array.from({ length: 400 }, (_, i) => `Sentence ${i} about durable processing of uploaded documents.`).join(' ');
      const r = await upload(user.api, ws, Buffer.from(text), 'long.txt');
      expect(r.status).toBe(201);
      await server.crash();
      server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'warn' }, server.dataDir);
      const login = await client(server.url).post('/v1/auth/login', { email: user.email, password: 'correct horse battery' });
      const api = client(server.url, login.body.accessToken);
      const d = await settled(api, ws, r.body.id);
      expect(d.processingStatus).toBe('VERIFIED');
      expect(d.chunkCount).toBeGreaterThan(1);
    } finally {
      await server.stop();
    }
  });
});
