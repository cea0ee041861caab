import fs from 'node:fs';
import path from 'node:path';
import { signUp, startServer, TestServer } from '../support/server';
import { blobTempFiles, eventually, multipart, openPartFiles, openRequest, within } from '../support/rawHttp';

/**
 * Hostile uploads (issue 11, findings 1 and 2), against the real server: a body cut short
 * must answer 400 and leave the process running; a client that hangs up mid-upload must
 * leave no temp file and no open handle behind; uploads are rate-limited per user.
 */

type User = Awaited<ReturnType<typeof signUp>>;

async function alive(server: TestServer): Promise<void> {
  expect(server.proc.exitCode).toBeNull();
  const r = await fetch(`${server.url}/healthz`);
  expect(r.status).toBe(200);
}

/** Sends exactly `body` (with its true length) as a multipart upload and returns the outcome. */
async function sendRaw(server: TestServer, user: User, ws: string, boundary: string, body: Buffer) {
  const { req, outcome } = openRequest(server.url, 'POST', `/v1/workspaces/${ws}/documents`, {
    authorization: `Bearer ${user.token}`,
    'content-type': `multipart/form-data; boundary=${boundary}`,
    'content-length': body.length,
  });
  req.end(body);
  const r = await within(outcome, 15_000);
  if (r === 'pending') throw new Error('no answer within 15 s');
  return r;
}

describe('abuse: uploads', () => {
  let server: TestServer;
  let user: User;
  let ws: string;

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'warn' });
    user = await signUp(server.url, 'Uploader');
    ws = (await user.api.post('/v1/workspaces', { name: 'Uploads' })).body.id;
  });
  afterAll(async () => {
    await server?.stop();
  });

  describe('finding 1: a multipart body cut short answers 400 and the process lives on', () => {
    const text = 'Hello there.\n'.repeat(2000);
    const cases: Array<[string, (m: ReturnType<typeof multipart>) => Buffer]> = [
      ['inside the file part (no closing boundary)', (m) => Buffer.concat([m.head, m.file])],
      ['right after the file part (no closing boundary)', (m) => Buffer.concat([m.head, m.file, Buffer.from(`\r\n--${m.boundary}`)])],
      ['inside the headers of the file part', (m) => m.head.subarray(0, m.head.length - 20)],
      ['inside a field before the file', (m) => Buffer.from(`--${m.boundary}\r\ncontent-disposition: form-data; name="title"\r\n\r\nhalf a ti`)],
    ];
    it.each(cases)('body ending %s', async (_name, cut) => {
      const m = multipart('notes.txt', text, { title: 'Truncated' });
      const r = await sendRaw(server, user, ws, m.boundary, cut(m));
      expect(r.kind).toBe('answer');
      if (r.kind !== 'answer') return;
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ error: { code: 'VALIDATION_ERROR', message: expect.any(String) } });
      expect(r.text).not.toMatch(/\bat .+\.js:\d+/); // no stack trace
      await alive(server);
      expect(await eventually(() => blobTempFiles(server.dataDir).length === 0, 5_000)).toBe(true);
    });

    it('a field named after an Object.prototype member is a field, not a crash or a 500', async () => {
      for (const name of ['__proto__', 'constructor', 'hasOwnProperty']) {
        const m = multipart('notes.txt', text, { [name]: 'x' });
        const r = await sendRaw(server, user, ws, m.boundary, Buffer.concat([m.head, m.file, m.tail]));
        expect({ name, status: r.kind === 'answer' ? r.status : r.kind }).toEqual({ name, status: 201 });
        await alive(server);
      }
    });

    it('a complete upload still works afterwards', async () => {
      const m = multipart('notes.txt', text, { title: 'Complete' });
      const r = await sendRaw(server, user, ws, m.boundary, Buffer.concat([m.head, m.file, m.tail]));
      expect(r.kind === 'answer' && r.status).toBe(201);
    });
  });

  describe('finding 2: a client hanging up mid-upload leaves no temp file and no open handle', () => {
    it('removes the .part file and closes its handle when the client disconnects', async () => {
      const m = multipart('big.txt', 'x');
      const total = 4 * 1024 * 1024;
      const { req, outcome } = openRequest(server.url, 'POST', `/v1/workspaces/${ws}/documents`, {
        authorization: `Bearer ${user.token}`,
        'content-type': `multipart/form-data; boundary=${m.boundary}`,
        'content-length': m.head.length + total + m.tail.length,
      });
      req.write(m.head);
      req.write(Buffer.alloc(256 * 1024, 'a'));
      // The upload is under way: its temp file exists and the server holds it open.
      expect(await eventually(() => blobTempFiles(server.dataDir).length === 1, 10_000)).toBe(true);
      expect(await eventually(() => openPartFiles(server.proc.pid as number).length === 1, 10_000)).toBe(true);
      req.destroy();
      await outcome;
      expect(await eventually(() => blobTempFiles(server.dataDir).length === 0, 10_000)).toBe(true);
      expect(await eventually(() => openPartFiles(server.proc.pid as number).length === 0, 10_000)).toBe(true);
      await alive(server);
    });

    it('also when the client hangs up inside the part headers or between parts', async () => {
      for (const cut of [20, 60]) {
        const m = multipart('big.txt', 'x', { title: 'T' });
        const { req, outcome } = openRequest(server.url, 'POST', `/v1/workspaces/${ws}/documents`, {
          authorization: `Bearer ${user.token}`,
          'content-type': `multipart/form-data; boundary=${m.boundary}`,
          'content-length': 1_000_000,
        });
        req.write(m.head.subarray(0, cut));
        await new Promise((r) => setTimeout(r, 300));
        req.destroy();
        await outcome;
        await alive(server);
      }
      expect(await eventually(() => blobTempFiles(server.dataDir).length === 0, 10_000)).toBe(true);
    });
  });
});

describe('abuse: uploads across restarts and per user', () => {
  it('finding 2: temp files left by a previous run are swept at start-up', async () => {
    let server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'warn' });
    const dataDir = server.dataDir;
    await server.stop();
    const tmp = path.join(dataDir, 'blobs', '.tmp');
    fs.mkdirSync(tmp, { recursive: true });
    // As a crash mid-upload leaves them: one from long ago, one from just now.
    fs.writeFileSync(path.join(tmp, `${Date.now()}-0123456789abcdef.part`), Buffer.alloc(1024));
    const old = path.join(tmp, `${Date.now() - 86_400_000}-fedcba9876543210.part`);
    fs.writeFileSync(old, Buffer.alloc(1024));
    fs.utimesSync(old, new Date(Date.now() - 86_400_000), new Date(Date.now() - 86_400_000));
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'warn' }, dataDir);
    try {
      expect(blobTempFiles(dataDir)).toEqual([]);
    } finally {
      await server.stop();
    }
  });

  it('finding 2: uploads are rate-limited per user (429 RATE_LIMITED with Retry-After)', async () => {
    const server = await startServer({ KB_UPLOAD_RATE_PER_MINUTE: '3', KB_LOG_LEVEL: 'warn' });
    try {
      const a = await signUp(server.url, 'A');
      const b = await signUp(server.url, 'B');
      const wsA = (await a.api.post('/v1/workspaces', { name: 'A' })).body.id;
      const wsB = (await b.api.post('/v1/workspaces', { name: 'B' })).body.id;
      const up = (u: User, w: string, i: number) => {
        const fd = new FormData();
        fd.append('file', new Blob([`note ${i}\n`]), `n${i}.txt`);
        return u.api.post(`/v1/workspaces/${w}/documents`, fd);
      };
      for (let i = 0; i < 3; i++) expect((await up(a, wsA, i)).status).toBe(201);
      const limited = await up(a, wsA, 3);
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({ error: { code: 'RATE_LIMITED', message: expect.any(String), details: { retryAfter: expect.any(Number) } } });
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // Another user is not affected, and the refused upload left nothing behind.
      expect((await up(b, wsB, 0)).status).toBe(201);
      expect(blobTempFiles(server.dataDir)).toEqual([]);
      expect(server.proc.exitCode).toBeNull();
    } finally {
      await server.stop();
    }
  });
});
