import type http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { ErrorCode } from '../domain/errors';
import type { Metrics } from '../ports/metrics';
import { statusOf } from './errors';

/**
 * Requests node's HTTP parser refuses before any route runs (a request line of garbage, an
 * invalid character in a header, a Content-Length that is not a number or comes twice, bytes
 * after a body shorter than announced that do not start a request, a header block over node's
 * limit, headers that did not arrive within KB_HEADERS_TIMEOUT_MS). Left to node, the client
 * got a bare `400 Bad Request` (or 431, 408) with no body; here it gets the same status with
 * the `/v1` error envelope, `Connection: close`, and the connection is ended.
 *
 * Nothing of the request is logged or echoed (its headers and raw bytes may hold tokens): the
 * answer's message is ours, chosen by node's error code, and the count goes to the
 * `kb_http_malformed_requests_total{code}` metric.
 */

interface Refusal {
  code: ErrorCode;
  message: string;
}

/** Our words for node's parser and timeout error codes (never the parser's message). */
export function refusalOf(nodeCode: string | undefined): Refusal {
  switch (nodeCode) {
    case 'HPE_HEADER_OVERFLOW':
      return { code: 'HEADERS_TOO_LARGE', message: 'The request line and headers are too large.' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { code: 'REQUEST_TIMEOUT', message: 'The request did not arrive in time.' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { code: 'PAYLOAD_TOO_LARGE', message: 'The chunk extensions of the request body are too large.' };
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return { code: 'BAD_REQUEST', message: 'The request has an invalid Content-Length (not a number, repeated, or beside Transfer-Encoding).' };
    case 'HPE_INVALID_HEADER_TOKEN':
    case 'HPE_INVALID_HEADER_VALUE':
    case 'HPE_LF_EXPECTED':
    case 'HPE_CR_EXPECTED':
      return { code: 'BAD_REQUEST', message: 'A request header is malformed (an invalid character in its name or value, or a broken line end).' };
    case 'HPE_INVALID_METHOD':
    case 'HPE_INVALID_URL':
    case 'HPE_INVALID_VERSION':
    case 'HPE_INVALID_CONSTANT':
      return { code: 'BAD_REQUEST', message: 'The request line is malformed: expected METHOD /path HTTP/1.1 (bytes after a body shorter than its Content-Length are read as the next request).' };
    case 'HPE_INVALID_TRANSFER_ENCODING':
    case 'HPE_INVALID_CHUNK_SIZE':
    case 'HPE_STRICT':
      return { code: 'BAD_REQUEST', message: 'The request body is malformed (invalid chunked encoding).' };
    default:
      return { code: 'BAD_REQUEST', message: 'The request could not be read as HTTP/1.1.' };
  }
}

/** The whole answer (status line, headers, envelope), as bytes. */
export function refusalBytes(r: Refusal, requestId: string = randomUUID()): Buffer {
  const status = statusOf(r.code);
  const body = Buffer.from(JSON.stringify({ error: { code: r.code, message: r.message } }), 'utf8');
  const head = [
    `HTTP/1.1 ${status} ${REASONS.get(status) ?? 'Bad Request'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${body.length}`,
    'Connection: close',
    'Cache-Control: no-store',
    'X-Content-Type-Options: nosniff',
    'Referrer-Policy: no-referrer',
    `X-Request-Id: ${requestId}`,
    '',
    '',
  ].join('\r\n');
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

const REASONS: ReadonlyMap<number, string> = new Map([
  [400, 'Bad Request'],
  [408, 'Request Timeout'],
  [413, 'Payload Too Large'],
  [431, 'Request Header Fields Too Large'],
]);

/** How long an ended connection may keep sending before it is destroyed (its bytes are read and dropped meanwhile). */
const LINGER_MS = 2_000;

/** The connection's response in progress, if any (node keeps it on the socket). */
function inFlightResponse(socket: Duplex): http.ServerResponse | undefined {
  return (socket as Duplex & { _httpMessage?: http.ServerResponse | null })._httpMessage ?? undefined;
}

/**
 * Handles `server`'s 'clientError': the envelope answer, then the connection ended. A socket
 * that cannot take it (reset, already closed) is destroyed; so is one whose answer to the
 * previous request was cut short (ours would be read as the rest of it).
 */
export function answerClientErrors(server: http.Server, metrics: Metrics): void {
  // The parser, in its error state, reports every later read of the connection again: answered once.
  const answered = new WeakSet<Duplex>();
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (answered.has(socket)) return;
    answered.add(socket);
    const nodeCode = typeof err.code === 'string' ? err.code : undefined;
    const pending = inFlightResponse(socket);
    // Nobody to answer (the client reset or closed the connection, in the middle of a request
    // for HPE_INVALID_EOF_STATE), or a request whose body was still arriving, which can never
    // complete now: destroyed with the error, as node does, so that the request fails where it
    // is read (an upload's stream errs and its temp file is removed) instead of waiting forever.
    const unfinished = pending !== undefined && !pending.writableFinished;
    if (nodeCode === 'ECONNRESET' || nodeCode === 'EPIPE' || nodeCode === 'HPE_INVALID_EOF_STATE' || !socket.writable || (unfinished && !pending.req.complete && nodeCode !== 'ERR_HTTP_REQUEST_TIMEOUT')) {
      socket.destroy(err);
      return;
    }
    const refusal = refusalOf(nodeCode);
    metrics.malformedRequest(refusal.code);
    const refuse = (): void => {
      if (!socket.writable) {
        socket.destroy();
        return;
      }
      // Ended, not destroyed at once: closing a socket with unread input makes the kernel send a
      // reset, which can discard the answer before the client reads it. What the client still
      // sends is read and dropped until it closes, or for LINGER_MS.
      socket.on('error', () => undefined);
      socket.end(refusalBytes(refusal));
      const linger = setTimeout(() => socket.destroy(), LINGER_MS);
      linger.unref();
      socket.once('close', () => clearTimeout(linger));
      socket.resume();
    };
    if (!unfinished) return refuse();
    // The previous request of the connection is still being answered (bytes after a body shorter
    // than its Content-Length arrive while its route runs): that answer first, then ours.
    // A timeout is about that very request, which will not complete: answered now unless begun.
    if (nodeCode === 'ERR_HTTP_REQUEST_TIMEOUT') {
      if (pending.headersSent) socket.destroy();
      else refuse();
      return;
    }
    pending.once('close', () => (pending.writableFinished ? refuse() : socket.destroy()));
  });
}
