import http from 'node:http';
import { signUp, startServer, TestServer } from '../support/server';
import { blobTempFiles, closedBy, connect, eventually, multipart, openRequest, within } from '../support/rawHttp';

/**
 * Slow clients (issue 11, finding 9), against the real server with its limits shortened:
 * a JSON body that never finishes is cut off after KB_BODY_TIMEOUT_MS with 408 in the
 * route's envelope, headers that never finish after KB_HEADERS_TIMEOUT_MS, an upload gets
 * its own longer KB_UPLOAD_TIMEOUT_MS, and idle keep-alive connections outlive a load
 * balancer's idle time-out. Timing is only asserted loosely (bounded waits).
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('abuse: slow clients', () => {
  let server: TestServer;
  let user: Awaited<ReturnType<typeof signUp>>;
  let ws: string;

  beforeAll(async () => {
    server = await startServer({
      KB_RATE_LIMITS: 'off',
      KB_LOG_LEVEL: 'warn',
      KB_BODY_TIMEOUT_MS: '1000',
      KB_HEADERS_TIMEOUT_MS: '1000',
      KB_UPLOAD_TIMEOUT_MS: '6000',
    });
    user = await signUp(server.url, 'Slow');
    ws = (await user.api.post('/v1/workspaces', { name: 'Slow' })).body.id;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it.each([
    ['/v1/auth/login', 'v1', (b: any) => expect(b).toEqual({ error: { code: 'REQUEST_TIMEOUT', message: expect.any(String) } })],
    ['/api/instruction-sets/00000000-0000-4000-8000-000000000000/documents', 'api', (b: any) => expect(b.error).toMatchObject({ code: 'REQUEST_TIMEOUT', suggestion: expect.any(String) })],
    ['/public/sometoken/search', 'public', (b: any) => expect(b).toEqual({ error: 'REQUEST_TIMEOUT', message: expect.any(String) })],
  ])('a JSON body that never finishes on %s is answered 408 (%s envelope) and the connection closed', async (p, _family, check) => {
    const { req, outcome } = openRequest(server.url, 'POST', p, { 'content-type': 'application/json', 'content-length': 200, authorization: `Bearer ${user.token}` });
    req.write('{"email": "slow@exam');
    const r = await within(outcome, 10_000);
    expect(r).not.toBe('pending');
    if (r === 'pending' || r.kind !== 'answer') throw new Error(`expected an answer, got ${JSON.stringify(r)}`);
    expect(r.status).toBe(408);
    expect(r.headers.connection).toBe('close');
    check(r.body);
    req.destroy();
  });

  it('a body trickled byte by byte is cut off too (the limit is on the whole body, not idle time)', async () => {
    const { req, outcome } = openRequest(server.url, 'POST', '/v1/auth/login', { 'content-type': 'application/json', 'content-length': 1000 });
    const trickle = setInterval(() => req.write(' '), 100);
    try {
      const r = await within(outcome, 10_000);
      expect(r !== 'pending' && r.kind === 'answer' ? r.status : r).toBe(408);
    } finally {
      clearInterval(trickle);
      req.destroy();
    }
  });

  it('headers that never finish: the connection is closed', async () => {
    const socket = await connect(server.url);
    const closed = closedBy(socket);
    socket.write('POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n');
    const r = await within(closed, 10_000);
    expect(r).not.toBe('pending');
    socket.destroy();
  });

  it('an upload may take longer than a JSON body, within its own limit', async () => {
    const m = multipart('slow.txt', 'slow but steady\n'.repeat(20));
    const { req, outcome } = openRequest(server.url, 'POST', `/v1/workspaces/${ws}/documents`, {
      authorization: `Bearer ${user.token}`,
      'content-type': `multipart/form-data; boundary=${m.boundary}`,
      'content-length': m.head.length + m.file.length + m.tail.length,
    });
    req.write(m.head);
    for (let i = 0; i < 5; i++) {
      await sleep(500); // 2.5 s in all: past the 1 s JSON limit, within the 6 s upload limit
      req.write(m.file.subarray(Math.floor((i * m.file.length) / 5), Math.floor(((i + 1) * m.file.length) / 5)));
    }
    req.end(m.tail);
    const r = await within(outcome, 10_000);
    expect(r !== 'pending' && r.kind === 'answer' ? r.status : r).toBe(201);
  });

  it('an upload that never finishes is answered 408 after the upload limit, and leaves no temp file', async () => {
    const m = multipart('never.txt', 'x');
    const { req, outcome } = openRequest(server.url, 'POST', `/v1/workspaces/${ws}/documents`, {
      authorization: `Bearer ${user.token}`,
      'content-type': `multipart/form-data; boundary=${m.boundary}`,
      'content-length': 10_000_000,
    });
    req.write(m.head);
    req.write(Buffer.alloc(64 * 1024, 'a'));
    const r = await within(outcome, 20_000);
    expect(r).not.toBe('pending');
    if (r !== 'pending' && r.kind === 'answer') {
      expect(r.status).toBe(408);
      expect({ status: r.status, body: r.body }).toEqual({ status: 408, body: { error: { code: 'REQUEST_TIMEOUT', message: expect.any(String) } } });
    }
    req.destroy();
    expect(await eventually(() => blobTempFiles(server.dataDir).length === 0, 10_000)).toBe(true);
    expect(server.proc.exitCode).toBeNull();
  });
});

describe('abuse: keep-alive', () => {
  it('an idle keep-alive connection outlives node\'s 5 s default (load balancers reuse them for 60 s)', async () => {
    const server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'warn' });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<{ status: number; reused: boolean; idleSeconds: number }>((resolve, reject) => {
        const req = http.get(`${server.url}/healthz`, { agent }, (res) => {
          res.resume();
          const idleSeconds = Number(/timeout=(\d+)/.exec(String(res.headers['keep-alive']))?.[1]);
          res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket, idleSeconds }));
        });
        req.on('error', reject);
      });
    try {
      const first = await get();
      expect(first).toMatchObject({ status: 200, reused: false });
      expect(first.idleSeconds).toBeGreaterThan(60); // what the server keeps (and tells clients)
      await sleep(6_000);
      expect(await get()).toMatchObject({ status: 200, reused: true });
    } finally {
      agent.destroy();
      await server.stop();
    }
  });
});
