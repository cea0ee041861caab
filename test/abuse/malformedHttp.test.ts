import { startServer, TestServer } from '../support/server';
import { closedBy, connect } from '../support/rawHttp';

/**
 * Requests node's HTTP parser refuses before any route runs (src/http/clientErrors.ts). Before,
 * node answered them itself: a bare `HTTP/1.1 400 Bad Request` (431, 408) with no body and no
 * envelope. Each is sent by hand on a raw socket; the test reads until the server closes it.
 */

interface Raw {
  status: number;
  headers: Map<string, string>;
  body: unknown;
}

/** The answers in `text` (one or more, back to back), parsed by their Content-Length. */
function answers(text: string): Raw[] {
  const out: Raw[] = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const lines = rest.slice(0, end).split('\r\n');
    const status = Number(lines[0].split(' ')[1]);
    const headers = new Map(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as [string, string]));
    const length = Number(headers.get('content-length') ?? 0);
    const raw = Buffer.from(rest.slice(end + 4), 'latin1').subarray(0, length).toString('utf8');
    let body: unknown = raw;
    try {
      body = JSON.parse(raw);
    } catch {
      /* not JSON */
    }
    out.push({ status, headers, body });
    rest = rest.slice(end + 4 + Buffer.byteLength(raw, 'utf8'));
  }
  return out;
}

describe('abuse: requests node cannot parse get the envelope, not a bare 400', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'info', KB_HEADERS_TIMEOUT_MS: '1000' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** Sends `bytes` on a new connection; resolves with what came back once the server closed it. */
  async function send(bytes: string | Buffer): Promise<Raw[]> {
    const s = await connect(server.url);
    const closed = closedBy(s);
    s.write(bytes);
    return answers(await closed);
  }

  const SECRET = 'Bearer sk-super-secret-token-0123456789';

  it.each([
    ['a request line of garbage', 'HELLO THERE, SERVER\r\n\r\n', 400, 'BAD_REQUEST'],
    ['an invalid character in a header name', `GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: ${SECRET}\r\nX-B\u0001d: y\r\n\r\n`, 400, 'BAD_REQUEST'],
    ['an invalid character in a header value', `GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: ${SECRET}\u0000x\r\n\r\n`, 400, 'BAD_REQUEST'],
    ['a Content-Length that is not a number', 'POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: twelve\r\n\r\n{}', 400, 'BAD_REQUEST'],
    ['two different Content-Lengths', 'POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}', 400, 'BAD_REQUEST'],
    ['an over-long header block', `GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: ${SECRET}\r\nX-Pad: ${'a'.repeat(64 * 1024)}\r\n\r\n`, 431, 'HEADERS_TOO_LARGE'],
  ])('%s: the status with the /v1 envelope, Connection: close, the connection ended', async (_name, request, status, code) => {
    const got = await send(request);
    expect(got).toHaveLength(1);
    const [a] = got;
    expect(a.status).toBe(status);
    expect(a.headers.get('connection')).toBe('close');
    expect(a.headers.get('content-type')).toMatch(/^application\/json/);
    expect(a.body).toEqual({ error: { code, message: expect.any(String) } });
    // Nothing of the request is echoed.
    expect(JSON.stringify(a.body)).not.toContain('secret');
  });

  it('a body shorter than its Content-Length: the request is answered, then the bytes after it are refused in the envelope', async () => {
    const got = await send('POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}, "password": "hunter2"}\r\n\r\n');
    expect(got.map((a) => a.status)).toEqual([400, 400]);
    expect(got[0].body).toMatchObject({ error: { code: 'VALIDATION_ERROR' } }); // `{}` is not a login
    expect(got[1].body).toEqual({ error: { code: 'BAD_REQUEST', message: expect.any(String) } });
    expect(got[1].headers.get('connection')).toBe('close');
    expect(JSON.stringify(got[1].body)).not.toContain('hunter2');
  });

  it('a body longer than its Content-Length... (the route reads what was announced): same as above, nothing bare', async () => {
    const got = await send('POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n{"a":1}');
    // `{"a":` is malformed JSON (the announced 5 bytes), then `1}` is no request.
    expect(got.map((a) => a.status)).toEqual([400, 400]);
    expect(got[0].body).toMatchObject({ error: { code: 'VALIDATION_ERROR' } });
    expect(got[1].body).toEqual({ error: { code: 'BAD_REQUEST', message: expect.any(String) } });
  });

  it('headers that do not arrive within KB_HEADERS_TIMEOUT_MS: 408 REQUEST_TIMEOUT in the envelope', async () => {
    const got = await send(`GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: ${SECRET}\r\n`);
    expect(got).toHaveLength(1);
    expect(got[0].status).toBe(408);
    expect(got[0].headers.get('connection')).toBe('close');
    expect(got[0].body).toEqual({ error: { code: 'REQUEST_TIMEOUT', message: expect.any(String) } });
  });

  it('a client that resets its connection mid-request is dropped without an answer, and the server keeps serving', async () => {
    const s = await connect(server.url);
    s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    s.resetAndDestroy();
    const ok = await fetch(`${server.url}/healthz`);
    expect(ok.status).toBe(200);
  });

  it('the refusals are counted by code, and nothing of the requests reached the log', async () => {
    const m = await fetch(`${server.url}/metrics`).then((r) => r.text());
    expect(m).toMatch(/kb_http_malformed_requests_total\{code="BAD_REQUEST"\} [1-9]/);
    expect(m).toMatch(/kb_http_malformed_requests_total\{code="HEADERS_TOO_LARGE"\} [1-9]/);
    expect(m).toMatch(/kb_http_malformed_requests_total\{code="REQUEST_TIMEOUT"\} [1-9]/);
    expect(server.output()).not.toContain('sk-super-secret');
    expect(server.output()).not.toContain('hunter2');
  });
});
