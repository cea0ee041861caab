import fs from 'node:fs';
import path from 'node:path';
import { signUp, startServer, TestServer } from '../support/server';
import { eventually, multipart, openRequest, within } from '../support/rawHttp';

/**
 * An upload authorised before its workspace was deleted, whose body arrives after the
 * deletion, must not leave a document (and its file, in clear) behind that nobody can
 * reach or delete: the workspace's deletion removes it too.
 */

/** Every file under the blob store (temp files excluded) whose bytes contain `marker`. */
function blobsHolding(dataDir: string, marker: string): string[] {
  const root = path.join(dataDir, 'blobs');
  const out: string[] = [];
  const walk = (dir: string) => {
    let names: string[];
    try {
      names = fs.readdirSync(dir);
    } catch {
      return;
    }
    for (const n of names) {
      if (n === '.tmp') continue;
      const p = path.join(dir, n);
      if (fs.statSync(p).isDirectory()) walk(p);
      else if (fs.readFileSync(p).includes(marker)) out.push(p);
    }
  };
  walk(root);
  return out;
}

describe('abuse: an upload racing the deletion of its workspace', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'warn' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('a document whose upload finishes after the workspace was deleted is deleted too, file included', async () => {
    const owner = await signUp(server.url, 'Owner');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Doomed' })).body.id as string;
    const marker = `orphan-secret-${Date.now()}`;
    const m = multipart('late.md', `# Late\n\n${marker} ${'words '.repeat(200)}`);
    const body = Buffer.concat([m.head, m.file, m.tail]);
    const { req, outcome } = openRequest(server.url, 'POST', `/v1/workspaces/${ws}/documents`, {
      authorization: `Bearer ${owner.token}`,
      'content-type': `multipart/form-data; boundary=${m.boundary}`,
      'content-length': body.length,
    });
    // Headers and half the body: the route has checked membership and is reading the file.
    req.write(body.subarray(0, m.head.length + 10));
    await new Promise((r) => setTimeout(r, 300));
    expect((await owner.api.delete(`/v1/workspaces/${ws}`)).status).toBe(204);
    req.end(body.subarray(m.head.length + 10));
    const r = await within(outcome, 15_000);
    if (r === 'pending' || r.kind !== 'answer') throw new Error('no answer to the upload');
    // Accepted (the request was authorised) or refused: either way nothing may stay behind.
    if (r.status === 201) {
      const id = r.body.id as string;
      expect((await owner.api.get(`/v1/documents/${id}`)).status).toBe(404);
    }
    expect(await eventually(() => blobsHolding(server.dataDir, marker).length === 0, 20_000)).toBe(true);
    expect(server.output()).not.toMatch(/"level":50/);
  });
});
