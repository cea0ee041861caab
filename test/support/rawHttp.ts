import http from 'node:http';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/** What a hand-driven request ended with: an answer, or the connection closed/reset without one. */
export type RawOutcome = { kind: 'answer'; status: number; headers: http.IncomingHttpHeaders; body: any; text: string } | { kind: 'closed'; error?: string };

export interface OpenRequest {
  req: http.ClientRequest;
  /** Settles when the server answers or the connection ends; never rejects. */
  outcome: Promise<RawOutcome>;
}

/**
 * Starts a request whose body the test writes by hand (`req.write`), so it can stop
 * half-way, trickle, or never finish: what fetch cannot do. No agent: one connection each.
 */
export function openRequest(base: string, method: string, p: string, headers: Record<string, string | number>): OpenRequest {
  const req = http.request(base + p, { method, headers, agent: false });
  const outcome = new Promise<RawOutcome>((resolve) => {
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      const done = () => {
        let body: any = text;
        try {
          body = text ? JSON.parse(text) : undefined;
        } catch {
          /* not JSON */
        }
        resolve({ kind: 'answer', status: res.statusCode ?? 0, headers: res.headers, body, text });
      };
      res.on('end', done);
      res.on('error', done);
      res.on('aborted', done);
    });
    req.on('error', (err) => resolve({ kind: 'closed', error: err.message }));
    req.on('close', () => resolve({ kind: 'closed' }));
  });
  return { req, outcome };
}

/** Resolves with the outcome, or with 'pending' when nothing happened within `ms`. */
export async function within<T>(p: Promise<T>, ms: number): Promise<T | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<'pending'>((resolve) => (timer = setTimeout(() => resolve('pending'), ms)));
  try {
    return await Promise.race([p, pending]);
  } finally {
    clearTimeout(timer);
  }
}

/** A raw TCP connection to the server (for requests whose headers never finish). */
export function connect(base: string): Promise<net.Socket> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(u.port), u.hostname, () => resolve(s));
    s.on('error', reject);
  });
}

/** Resolves when the socket is closed by the other side (or errors); with the bytes received. */
export function closedBy(socket: net.Socket): Promise<string> {
  let got = '';
  socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
  return new Promise((resolve) => {
    socket.on('close', () => resolve(got));
    socket.on('error', () => undefined);
  });
}

/** A multipart/form-data body with a `file` part (and fields), as bytes, plus its boundary. */
export function multipart(filename: string, content: Buffer | string, fields: Record<string, string> = {}): { boundary: string; head: Buffer; file: Buffer; tail: Buffer } {
  const boundary = `----kbtest${Math.random().toString(16).slice(2)}`;
  let head = '';
  for (const [k, v] of Object.entries(fields)) head += `--${boundary}\r\ncontent-disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`;
  head += `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${filename}"\r\ncontent-type: application/octet-stream\r\n\r\n`;
  return { boundary, head: Buffer.from(head), file: Buffer.isBuffer(content) ? content : Buffer.from(content), tail: Buffer.from(`\r\n--${boundary}--\r\n`) };
}

/** Names in the blob store's temp directory of a server's data dir. */
export function blobTempFiles(dataDir: string): string[] {
  try {
    return fs.readdirSync(path.join(dataDir, 'blobs', '.tmp'));
  } catch {
    return [];
  }
}

/** Files of the process `pid` held open whose path ends in `.part` (Linux /proc). */
export function openPartFiles(pid: number): string[] {
  const dir = `/proc/${pid}/fd`;
  let fds: string[];
  try {
    fds = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const fd of fds) {
    try {
      const target = fs.readlinkSync(path.join(dir, fd));
      if (/\.part( \(deleted\))?$/.test(target)) out.push(target);
    } catch {
      /* closed meanwhile */
    }
  }
  return out;
}

/** Polls `check` every 100 ms until it returns true; false after `ms`. */
export async function eventually(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}
