import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { joinSections } from '../../src/domain/document/eventParts';
import { MAX_EVENT_BYTES } from '../../src/domain/eventSize';
import { client, signUp, startServer, TestServer } from '../support/server';

const run = promisify(execFile);
const root = path.resolve(__dirname, '..', '..');
const DIMENSIONS = 1536;

/** An OpenAI-compatible embeddings server: each word hashed into one of 1536 buckets (the real `openai` client talks to it). */
function fakeOpenAI(): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let requests = 0;
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      requests++;
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as { input: string[]; model: string };
      const data = body.input.map((text, index) => {
        const v = new Array<number>(DIMENSIONS).fill(0);
        for (const w of text.toLowerCase().split(/\W+/).filter(Boolean)) v[createHash('md5').update(w).digest().readUInt32LE(0) % DIMENSIONS] += 1;
        v[0] += 0.01;
        return { object: 'embedding', index, embedding: v };
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: 0, total_tokens: 0 } }));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        requests: () => requests,
        close: () => new Promise<void>((r) => server.close(() => r())),
      }),
    ),
  );
}

/** About `bytes` of prose: paragraphs of pseudo-random words, some quoted, one very long paragraph, a marker near the end. */
function bigText(bytes: number): string {
  const words = ['harbour', 'granite', 'lantern', 'meadow', 'quartz', '"quoted"', 'tide', 'river', 'ledger', 'compass', 'ember', 'falcon', 'café', 'naïve'];
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
  const paragraphs: string[] = [];
  let size = 0;
  while (size < bytes) {
    const long = paragraphs.length === 3;
    const n = long ? 60_000 : 40 + (next() % 200);
    const p = Array.from({ length: n }, () => words[next() % words.length]).join(' ');
    paragraphs.push(p);
    size += Buffer.byteLength(p) + 2;
  }
  paragraphs.splice(paragraphs.length - 2, 0, 'The zanzibarite marker sits near the end.');
  return paragraphs.join('\n\n');
}

describe('a 1.5 MB text document: every event under the bound', () => {
  let server: TestServer;
  let openai: Awaited<ReturnType<typeof fakeOpenAI>>;

  beforeAll(async () => {
    openai = await fakeOpenAI();
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_EMBEDDINGS: 'openai', KB_OPENAI_BASE_URL: openai.url, KB_OPENAI_API_KEY: 'test-key' });
  });
  afterAll(async () => {
    await server?.stop();
    await openai?.close();
  });

  it('is uploaded over HTTP, reaches VERIFIED, and `kb export` shows no event over MAX_EVENT_BYTES', async () => {
    const owner = await signUp(server.url, 'Owner');
    const api = client(server.url, owner.token);
    const ws = (await api.post('/v1/workspaces', { name: 'Large' })).body.id as string;
    const text = bigText(1.5 * 1024 * 1024);
    expect(Buffer.byteLength(text)).toBeGreaterThan(1.5 * 1024 * 1024);

    const fd = new FormData();
    fd.append('file', new Blob([text]), 'large.txt');
    const up = await api.post(`/v1/workspaces/${ws}/documents`, fd);
    expect(up.status).toBe(201);
    const id = up.body.id as string;
    let doc: any;
    for (let i = 0; i < 1200; i++) {
      doc = (await api.get(`/v1/workspaces/${ws}/documents/${id}`)).body;
      if (doc.processingStatus === 'VERIFIED' || doc.processingStatus === 'FAILED') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(doc.processingStatus).toBe('VERIFIED');
    expect(openai.requests()).toBeGreaterThan(0);

    // The whole text is searchable (the marker is in the last text part).
    const hit = await api.post(`/v1/workspaces/${ws}/search`, { query: 'zanzibarite marker', limit: 3 });
    expect(hit.status).toBe(200);
    expect(JSON.stringify(hit.body.results)).toContain('zanzibarite');

    const exported = await run(process.execPath, [path.join(root, 'dist/src/cli.js'), 'export'], {
      cwd: root,
      env: { ...process.env, KB_DATA_DIR: server.dataDir, KB_LOG_LEVEL: 'silent', KB_JWT_SECRET: 'test-secret-test-secret-test-secret' },
      maxBuffer: 256 * 1024 * 1024,
    });
    const lines = exported.stdout.split('\n').filter(Boolean);
    const largest = Math.max(...lines.map((l) => Buffer.byteLength(l)));
    expect(largest).toBeLessThanOrEqual(MAX_EVENT_BYTES);
    const events = lines.map((l) => JSON.parse(l)).filter((e) => e.data?.documentId === id);

    // The text came in several parts, each carrying the totals; joined, it is the document's text.
    const parts = events.filter((e) => e.type === 'DocumentTextExtracted');
    expect(parts.length).toBeGreaterThan(5);
    parts.forEach((p, i) => expect([p.data.part, p.data.parts, p.data.sizeBytes]).toEqual([i, parts.length, doc.sizeBytes]));
    const joined = joinSections(parts.flatMap((p) => p.data.sections));
    expect(Buffer.byteLength(joined)).toBe(doc.sizeBytes);
    expect(joined.replace(/\s+/g, ' ')).toBe(text.replace(/\s+/g, ' '));
    const chunks = events.filter((e) => e.type === 'DocumentChunked').flatMap((e) => e.data.chunks);
    const vectors = events.filter((e) => e.type === 'ChunksEmbedded').flatMap((e) => e.data.vectors);
    expect(chunks.map((c) => c.index)).toEqual(Array.from({ length: doc.chunkCount }, (_, i) => i));
    expect(vectors.map((v) => v.index).sort((a, b) => a - b)).toEqual(chunks.map((c) => c.index));
    expect(events.filter((e) => e.type === 'ChunksEmbedded').every((e) => e.data.dimensions === DIMENSIONS)).toBe(true);

    // As stored (text sealed by the encrypting store): still far under EventStoreDB's 1 MiB per append.
    const db = new Database(path.join(server.dataDir, 'events.db'), { readonly: true, fileMustExist: true });
    try {
      const row = db.prepare('SELECT MAX(LENGTH(data) + LENGTH(metadata)) AS n FROM events').get() as { n: number };
      expect(row.n).toBeLessThan(400 * 1024);
    } finally {
      db.close();
    }

    // The instruction-set size checks see the whole document's size.
    const set = await api.post(`/api/workspaces/${ws}/instruction-sets`, { name: 'Too small' });
    expect(set.status).toBe(201);
    const add = await api.post(`/api/instruction-sets/${set.body.id}/documents`, { documentId: id });
    expect(add.status).toBe(400);
    expect(add.body.error.code).toBe('SIZE_LIMIT_EXCEEDED');
    expect(add.body.error.details.documentSize).toBe(doc.sizeBytes);

    // Auto-saved content whose event would pass the bound is refused with a clear error; nothing changes.
    const save = await api.patch(`/v1/workspaces/${ws}/documents/${id}`, { content: 'word '.repeat(60_000) });
    expect(save.status).toBe(413);
    expect(save.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(save.body.error.message).toMatch(/DocumentContentUpdated event of \d+ bytes would pass the 262144-byte limit/);
    expect((await api.get(`/v1/workspaces/${ws}/documents/${id}`)).body.processingStatus).toBe('VERIFIED');
  }, 300_000);
});
