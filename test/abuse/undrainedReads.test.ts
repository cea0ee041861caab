import net from 'node:net';
import { signUp, startServer, TestServer } from '../support/server';
import fs from 'node:fs';
import { closedBy, connect, eventually } from '../support/rawHttp';

/**
 * Whole-document reads take turns process-wide (src/http/wholeDocumentReads.ts). A client that
 * asks for a large text and never reads its socket must not keep its turn (fourth hostile
 * look): two such clients of one tenant stalled every other tenant's whole-document reads
 * until their sockets timed out. Completion is asserted, never a time: a read that stays
 * stuck fails by the test's time-out.
 */
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
    const fd = new FormData();
    fd.append('file', new Blob([' \n'.repeat(bytes / 2)]), 'big.txt');
    const doc = (await u.api.post(`/v1/workspaces/${ws}/documents`, fd)).body.id as string;
    const openBlobs = () => {
      const dir = `/proc/${server.proc.pid}/fd`;
      return fs.readdirSync(dir).filter((f) => {
        try {
          return fs.readlinkSync(`${dir}/${f}`).includes(`${server.dataDir}/blobs/`);
        } catch {
          return false; // closed meanwhile
        }
      }).length;
    };
    const stalled = [await neverReads(`/v1/documents/${doc}/file`, u.token), await neverReads(`/v1/documents/${doc}/file`, u.token)];
    // The server opened the stored file for them, then lets go of it (before: held as long as the connections, for good).
    expect(await eventually(() => openBlobs() > 0, 20_000)).toBe(true);
    expect(await eventually(() => openBlobs() === 0, 20_000)).toBe(true);
    const received = stalled.map((s) => closedBy(s));
    for (const s of stalled) s.resume();
    for (const got of await Promise.all(received)) {
      expect(got.startsWith('HTTP/1.1 200')).toBe(true);
      expect(got.length).toBeLessThan(bytes);
    }
    // A client that reads gets the whole file.
    const whole = await fetch(`${server.url}/v1/documents/${doc}/file`, { headers: { authorization: `Bearer ${u.token}` } });
    expect((await whole.arrayBuffer()).byteLength).toBe(bytes);
  }, 30_000);

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
