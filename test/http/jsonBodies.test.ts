import net from 'node:net';
import { signUp, startServer, TestServer } from '../support/server';

/**
 * JSON bodies of the common kind (application/json, UTF-8, with a length) are read by
 * src/http/jsonBody.ts, every other by express.json: the same answers either way (this file
 * passes against the server before that reader existed).
 */
describe('JSON request bodies: what body-parser accepted and refused, still', () => {
  let server: TestServer;
  let token: string;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    token = (await signUp(server.url, 'Bodies')).token;
  });
  afterAll(async () => server.stop());

  /** POST /v1/workspaces with raw bytes, sent in the given pieces (a pause between them), over a plain socket. */
  const post = (body: Buffer[], contentType = 'application/json', length = body.reduce((n, b) => n + b.length, 0)) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const { port, hostname } = new URL(server.url);
      const socket = net.connect(Number(port), hostname, async () => {
        socket.write(
          `POST /v1/workspaces HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${token}\r\nContent-Type: ${contentType}\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`,
        );
        for (const piece of body) {
          socket.write(piece);
          await new Promise((r) => setTimeout(r, 30));
        }
      });
      let raw = '';
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => (raw += d));
      socket.on('error', reject);
      socket.on('end', () => {
        const status = Number(/^HTTP\/1\.1 (\d+)/.exec(raw)?.[1]);
        const text = raw.slice(raw.indexOf('\r\n\r\n') + 4);
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status, body: json });
      });
    });
  const utf8 = (s: string) => Buffer.from(s, 'utf8');

  it('reads a body whose multi-byte characters are split across packets', async () => {
    const whole = utf8(JSON.stringify({ name: 'Zürich ✓ 研究' }));
    const cut = whole.indexOf(0xe2) + 1; // inside the three bytes of ✓
    const r = await post([whole.subarray(0, cut), whole.subarray(cut)]);
    expect(r.status).toBe(201);
    expect(r.body.name).toBe('Zürich ✓ 研究');
  });

  it('drops a UTF-8 byte-order mark, skips leading whitespace, and takes charset=UTF-8 in any case', async () => {
    expect((await post([Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), utf8('{"name":"bom"}')])])).body.name).toBe('bom');
    expect((await post([utf8(' \r\n\t{"name":"spaced"}')])).body.name).toBe('spaced');
    expect((await post([utf8('{"name":"upper"}')], 'application/json; charset=UTF-8')).body.name).toBe('upper');
    expect((await post([utf8('{"name":"vendor"}')], 'application/vnd.kb+json')).body.name).toBe('vendor');
  });

  it('refuses what strict JSON refuses, as 400 VALIDATION_ERROR in the envelope', async () => {
    for (const body of ['"a string"', '42', 'null', '   ', '{"name":', '{"name":"x"} trailing']) {
      const r = await post([utf8(body)]);
      expect({ body, status: r.status, code: r.body?.error?.code }).toEqual({ body, status: 400, code: 'VALIDATION_ERROR' });
      expect(r.body.error.message).toBe('Malformed JSON in the request body.');
    }
  });

  it('an array body is parsed (and refused by the route, not the reader); an empty body is {}', async () => {
    const arr = await post([utf8('[]')]);
    expect(arr.status).toBe(400);
    expect(arr.body.error.message).not.toBe('Malformed JSON in the request body.');
    const empty = await post([]);
    expect(empty.status).toBe(400);
    expect(empty.body.error.message).not.toBe('Malformed JSON in the request body.');
  });

  it('a body over the limit (1 MiB) is 413; one just under it is read', async () => {
    const at = (n: number) => utf8(`{"name":"${'x'.repeat(n - 11)}"}`);
    expect(at(1024 * 1024)).toHaveLength(1024 * 1024);
    const under = await post([at(1024 * 1024)]);
    expect(under.status).toBe(400); // read, then refused by the route: the name is too long
    expect(under.body.error.message).not.toBe('The request body exceeds 1mb.');
    const r = await post([at(1024 * 1024 + 1)]);
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });
});
