import net from 'node:net';
import { signUp, startServer, TestServer } from '../support/server';
import fs from 'node:fs';
import { closedBy, connect, eventually } from '../support/rawHttp';
import { waitForStatus } from '../http/instructionSets.support';

/**
 * Whole-document reads take turns process-wide (src/http/wholeDocumentReads.ts). A client that
 * asks for a large text and never reads its socket must not keep its turn (fourth hostile
 * look): two such clients of one tenant stalled every other tenant's whole-document reads
 * until their sockets timed out. Completion is asserted, never a time: a read that stays
 * stuck fails by the test's time-out.
 */
/** Open file descriptors of the server on its stored files (blobs). */
function openBlobs(server: TestServer): number {
  const dir = `/proc/${server.proc.pid}/fd`;
  return fs.readdirSync(dir).filter((f) => {
    try {
      return fs.readlinkSync(`${dir}/${f}`).includes(`${server.dataDir}/blobs/`);
    } catch {
      return false; // closed meanwhile
    }
  }).length;
}

/**
 * Uploads `text` as a file and waits for its processing to end: the extraction no longer holds
 * the stored file open, so what a test counts from then on is its reads' (on a loaded machine
 * the extraction of these 16 MB took seconds, and held the file meanwhile).
 */
async function uploadProcessed(server: TestServer, u: Awaited<ReturnType<typeof signUp>>, ws: string, text: string, name: string): Promise<string> {
  const fd = new FormData();
  fd.append('file', new Blob([text]), name);
  const up = await u.api.post(`/v1/workspaces/${ws}/documents`, fd);
  expect(up.status).toBe(201);
  const doc = up.body.id as string;
  // Blank lines: nothing to extract, so the document ends FAILED (NO_TEXT).
  await waitForStatus(u.api, ws, doc, 'FAILED');
  expect(await eventually(() => openBlobs(server) === 0, 10_000)).toBe(true);
  return doc;
}

describe('abuse: whole-document reads whose clients never read', () => {
  let server: TestServer;
  beforeAll(async () => {
    // The default two turns; a client that takes nothing of its answer for 1 s loses its connection.
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'warn', KB_WHOLE_DOCUMENT_STALL_MS: '1000' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** Sends a GET and never reads: the socket is paused, so the kernel's buffers fill and the server's writes stop. */
  async function neverReads(path: string, token: string): Promise<net.Socket> {
    const s = await connect(server.url);
    s.pause();
    s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`);
    return s;
  }

  it("another tenant's whole-document reads are answered while one tenant's clients hold large answers unread; the stalled connections are closed", async () => {
    const hog = await signUp(server.url, 'Hog');
    const hogWs = (await hog.api.post('/v1/workspaces', { name: 'Big' })).body.id as string;
    // 16 MB of text: more than loopback's socket buffers hold, so a reader that never reads stalls the write.
    // Blank lines only: nothing to extract, so its processing ends at once (FAILED, NO_TEXT) and costs no CPU.
    const big = ' \n'.repeat(8 * 1024 * 1024);
    const fd = new FormData();
    fd.append('file', new Blob([big]), 'big.txt');
    const up = await hog.api.post(`/v1/workspaces/${hogWs}/documents`, fd);
    expect(up.status).toBe(201);
    const bigDoc = up.body.id as string;
    const content = `/v1/workspaces/${hogWs}/documents/${bigDoc}/content`;

    const other = await signUp(server.url, 'Other');
    const otherWs = (await other.api.post('/v1/workspaces', { name: 'Small' })).body.id as string;
    const small = (await other.api.post(`/v1/workspaces/${otherWs}/documents`, { title: 'Small', content: 'A few words.', format: 'text' })).body.id as string;

    // Three of the hog's clients, all never reading.
    const stalled = [await neverReads(content, hog.token), await neverReads(content, hog.token), await neverReads(content, hog.token)];

    // The other tenant's reads of a whole document are answered (before: they waited for the hog's sockets).
    const r = await other.api.get(`/v1/workspaces/${otherWs}/documents/${small}/content`);
    expect(r.status).toBe(200);
    expect(r.body.content).toBe('A few words.');
    const t = await other.api.get(`/v1/documents/${small}?asOf=2999-01-01T00:00:00Z`);
    expect(t.status).toBe(200);

    // The hog reads its text too once it reads its answers: its turns came back from the stalled clients.
    const whole = await hog.api.get(content);
    expect(whole.status).toBe(200);
    expect(whole.body.content.length).toBe(big.length);
    // Those connections were closed by the server, none having been sent the whole answer (what
    // the kernel buffered comes through once the client reads, then the end).
    const received = stalled.map((s) => closedBy(s));
    for (const s of stalled) s.resume(); // paused explicitly: a 'data' listener alone does not resume it
    for (const got of await Promise.all(received)) {
      expect(got.startsWith('HTTP/1.1 200')).toBe(true);
      expect(got.length).toBeLessThan(big.length);
    }
  }, 30_000);

  it('downloads of the original file whose clients never read are closed, and the stored file with them', async () => {
    const u = await signUp(server.url, 'Downloader');
    const ws = (await u.api.post('/v1/workspaces', { name: 'Files' })).body.id as string;
    const bytes = 16 * 1024 * 1024;
    const doc = await uploadProcessed(server, u, ws, ' \n'.repeat(bytes / 2), 'big.txt');
    const stalled = [await neverReads(`/v1/documents/${doc}/file`, u.token), await neverReads(`/v1/documents/${doc}/file`, u.token)];
    // The server opened the stored file for them, then lets go of it (before: held as long as the connections, for good).
    expect(await eventually(() => openBlobs(server) > 0, 20_000)).toBe(true);
    expect(await eventually(() => openBlobs(server) === 0, 20_000)).toBe(true);
    const received = stalled.map((s) => closedBy(s));
    for (const s of stalled) s.resume();
    for (const got of await Promise.all(received)) {
      expect(got.startsWith('HTTP/1.1 200')).toBe(true);
      expect(got.length).toBeLessThan(bytes);
    }
    // A client that reads gets the whole file.
    const whole = await fetch(`${server.url}/v1/documents/${doc}/file`, { headers: { authorization: `Bearer ${u.token}` } });
    expect((await whole.arrayBuffer()).byteLength).toBe(bytes);
  }, 90_000);

  it('a whole-document read pipelined behind another on a connection the client then closes gives its turn back', async () => {
    const u = await signUp(server.url, 'Pipeliner');
    const ws = (await u.api.post('/v1/workspaces', { name: 'Pipes' })).body.id as string;
    const fd = new FormData();
    fd.append('file', new Blob([' \n'.repeat(4 * 1024 * 1024)]), 'big.txt');
    const doc = (await u.api.post(`/v1/workspaces/${ws}/documents`, fd)).body.id as string;
    const content = `/v1/workspaces/${ws}/documents/${doc}/content`;
    for (let round = 0; round < 2; round++) {
      // Two requests on one connection: node answers them in order, so the second waits for the first's socket.
      const s = await connect(server.url);
      s.pause();
      const request = `GET ${content} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${u.token}\r\n\r\n`;
      s.write(request + request);
      // Once the first answer has begun, the client leaves.
      await new Promise<void>((resolve) => s.once('readable', () => resolve()));
      s.destroy();
    }
    // The caller's share of the turns is free again: its next read is answered (before: the queued
    // answers, which never got the closed connection, held the turns for good).
    const r = await u.api.get(content);
    expect(r.status).toBe(200);
    expect(r.body.content.length).toBe(8 * 1024 * 1024);
  }, 30_000);
});

/**
 * A client that takes a little of its answer now and then (one slice every 9 s by default) never
 * trips the stall bound, and held its turn (or its download's stored file) for as long as it
 * liked. Answers must now average KB_WHOLE_DOCUMENT_MIN_BYTES_PER_S once the stall time has
 * passed. Settings shortened: one turn in all, 2 s, 4 MiB/s; the slow reader takes 64 KiB every
 * 100 ms (~640 KiB/s: a 256 KiB slice every ~0.4 s), often enough for the stall bound (with the
 * floor at 1 byte/s it keeps its turn), far below the floor. Outcomes are asserted, never times:
 * a bound that does not hold fails by the test's time-out (the slow reader would take ~37 s for
 * the 24 MB answer, ~25 s for the 16 MiB file).
 */
describe('abuse: whole-document reads and downloads taken slowly', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({
      KB_RATE_LIMITS: 'off',
      KB_LOG_LEVEL: 'warn',
      KB_WHOLE_DOCUMENT_READS_AT_ONCE: '1',
      KB_WHOLE_DOCUMENT_STALL_MS: '2000',
      KB_WHOLE_DOCUMENT_MIN_BYTES_PER_S: String(4 * 1024 * 1024),
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** Sends a GET, then takes about `bytes` every `everyMs`; `fast()` then reads the rest at once. */
  async function slowReader(path: string, token: string, everyMs: number, bytes = 64 * 1024) {
    const s = await connect(server.url);
    s.pause();
    let text = '';
    let slow = true;
    let budget = 0;
    s.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      budget -= d.length;
      if (slow && budget <= 0) s.pause();
    });
    s.on('error', () => undefined);
    const timer = setInterval(() => {
      budget = bytes;
      s.resume();
    }, everyMs);
    const closed = new Promise<string>((resolve) => s.on('close', () => resolve(text)));
    s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`);
    const begun = new Promise<void>((resolve) => s.once('data', () => resolve()));
    return {
      begun,
      closed,
      fast: () => {
        clearInterval(timer);
        slow = false;
        s.resume();
      },
    };
  }

  async function bigText(u: Awaited<ReturnType<typeof signUp>>, ws: string): Promise<{ doc: string; chars: number }> {
    // 16 MB of blank lines: nothing to extract (FAILED, NO_TEXT, no CPU spent), the text kept whole.
    const big = ' \n'.repeat(8 * 1024 * 1024);
    return { doc: await uploadProcessed(server, u, ws, big, 'big.txt'), chars: big.length };
  }

  it("a reader that takes its answer slowly loses its connection and its turn: another tenant's read is answered", async () => {
    const slowUser = await signUp(server.url, 'Trickle');
    const ws = (await slowUser.api.post('/v1/workspaces', { name: 'Big' })).body.id as string;
    const { doc, chars } = await bigText(slowUser, ws);
    const other = await signUp(server.url, 'Waiting');
    const otherWs = (await other.api.post('/v1/workspaces', { name: 'Small' })).body.id as string;
    const small = (await other.api.post(`/v1/workspaces/${otherWs}/documents`, { title: 'Small', content: 'A few words.', format: 'text' })).body.id as string;

    const reader = await slowReader(`/v1/workspaces/${ws}/documents/${doc}/content`, slowUser.token, 100);
    await reader.begun; // it holds the only turn
    // Answered once the slow reader's turn is taken back (before: after the whole answer trickled through, ~37 s).
    const r = await other.api.get(`/v1/workspaces/${otherWs}/documents/${small}/content`);
    expect(r.status).toBe(200);
    expect(r.body.content).toBe('A few words.');
    // The slow connection was closed by the server before its answer was complete.
    reader.fast();
    const got = await reader.closed;
    expect(got.startsWith('HTTP/1.1 200')).toBe(true);
    expect(got.length).toBeLessThan(chars);
    // A reader that takes its answer at once gets all of it.
    const whole = await slowUser.api.get(`/v1/workspaces/${ws}/documents/${doc}/content`);
    expect(whole.status).toBe(200);
    expect(whole.body.content.length).toBe(chars);
  }, 90_000);

  it('a download taken slowly is closed, and the stored file with it', async () => {
    const u = await signUp(server.url, 'SlowDownload');
    const ws = (await u.api.post('/v1/workspaces', { name: 'Files' })).body.id as string;
    const { doc, chars } = await bigText(u, ws);
    const reader = await slowReader(`/v1/documents/${doc}/file`, u.token, 100);
    await reader.begun;
    expect(openBlobs(server)).toBeGreaterThan(0);
    // Let go of while the client still reads slowly (before: held until the last byte, ~25 s).
    expect(await eventually(() => openBlobs(server) === 0, 10_000)).toBe(true);
    reader.fast();
    const got = await reader.closed;
    expect(got.startsWith('HTTP/1.1 200')).toBe(true);
    expect(got.length).toBeLessThan(chars);
  }, 90_000);
});
