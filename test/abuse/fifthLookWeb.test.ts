import { signUp, startServer, TestServer } from '../support/server';

/**
 * A fifth hostile look at what the console and the public pages show other users: strings a
 * tenant member stores that an admin (or anyone with a public link) is later shown. Each test
 * fails on the code before its fix.
 */
describe('abuse: fifth look (web)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** A multipart upload whose file name is sent as RFC 5987 `filename*` (any code point, percent-encoded). */
  async function upload(token: string, ws: string, filename: string, title?: string): Promise<{ status: number; body: { error?: { code: string }; filename?: string } }> {
    const boundary = 'hostileWebBoundary';
    const parts = [
      ...(title !== undefined ? [`--${boundary}\r\nContent-Disposition: form-data; name="title"\r\n\r\n${title}\r\n`] : []),
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''${encodeURIComponent(filename).replace(/[()'*]/g, (c) => `%${c.charCodeAt(0).toString(16)}`)}\r\nContent-Type: text/plain\r\n\r\nThe lighthouse keeper's notes.\r\n`,
      `--${boundary}--\r\n`,
    ];
    const res = await fetch(`${server.url}/v1/workspaces/${ws}/documents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: parts.join(''),
    });
    return { status: res.status, body: (await res.json()) as { error?: { code: string }; filename?: string } };
  }

  it("an upload's file name obeys the text rule of names: no bidi override or isolate, no control character, at most 255 characters (400, nothing stored)", async () => {
    const user = await signUp(server.url, 'Uploader');
    const ws = (await user.api.post('/v1/workspaces', { name: 'Files' })).body.id as string;
    // With a title of its own the name was stored as sent, and shown to every member as the document's file
    // ("salary‮txt.exe‬.md" reads "salarydm.exe.txt"; "pay\u2067roll.md" reorders), and given to downloads.
    const hostile = ['salary\u202Etxt.exe\u202C.md', 'pay\u2067roll.md', 'line\nbreak.md', 'esc\u001b[31mred.md', 'del\u007f.md', 'c1\u0085.md', `${'a'.repeat(5000)}.md`];
    for (const name of hostile) {
      for (const title of ['Quarterly report', undefined]) {
        const r = await upload(user.token, ws, name, title);
        const label = JSON.stringify(name.length > 40 ? `${name.slice(0, 12)}… (${name.length})` : name);
        expect([label, title, r.status, r.body.error?.code]).toEqual([label, title, 400, 'VALIDATION_ERROR']);
      }
    }
    expect((await user.api.get(`/v1/workspaces/${ws}/documents`)).body.data).toEqual([]);
    // An ordinary name, in any script, is still taken as sent.
    const fine = await upload(user.token, ws, 'Rapport annuel – été 2025 (版本 2).md', 'Rapport');
    expect([fine.status, fine.body.filename]).toEqual([201, 'Rapport annuel – été 2025 (版本 2).md']);
    const longest = `${'é'.repeat(252)}.md`;
    expect([(await upload(user.token, ws, longest, 'Longest')).status, (await upload(user.token, ws, `é${longest}`, 'Too long')).status]).toEqual([201, 400]);
  });
});
