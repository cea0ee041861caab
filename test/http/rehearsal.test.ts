import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { client, signUp, startServer, TestServer } from '../support/server';

/**
 * Issue 13: the start-up rehearsal (src/roles/rehearsal.ts) runs an upload to VERIFIED and a
 * search in a throwaway container before /readyz says ready, and leaves no trace in the server's
 * log, read models, mail or data dir.
 */
describe('start-up rehearsal', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  async function ready(base: string): Promise<void> {
    for (let i = 0; i < 600; i++) {
      const r = await client(base).get('/readyz');
      if (r.status === 200) return;
      expect(r.body.status).toMatch(/^(warming|catching_up)$/);
      await new Promise((res) => setTimeout(res, 50));
    }
    throw new Error('never ready');
  }

  /**
   * The server's output has (or, with `absent`, still lacks) a line matching `re`: its stdout
   * reaches this process through a pipe, which may deliver the last lines after the answer of the
   * /readyz call that followed them, so a line is waited for a little before it counts as missing.
   */
  async function logged(re: RegExp): Promise<string> {
    for (let i = 0; i < 100 && !re.test(server!.output()); i++) await new Promise((res) => setTimeout(res, 20));
    return server!.output();
  }

  const eventCount = (dataDir: string): number => {
    const db = new Database(path.join(dataDir, 'events.db'), { readonly: true, fileMustExist: true });
    try {
      return (db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
    } finally {
      db.close();
    }
  };

  /** What the live search index holds: chunks, workspaces numbered, vector models, checkpoint. */
  const indexContents = (dataDir: string) => {
    const db = new Database(path.join(dataDir, 'search.db'), { readonly: true, fileMustExist: true });
    try {
      const n = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
      return {
        chunks: n('SELECT count(*) AS n FROM chunks'),
        text: n('SELECT count(*) AS n FROM chunks_fts'),
        workspaces: n('SELECT count(*) AS n FROM workspace_numbers'),
        models: n('SELECT count(*) AS n FROM vector_models'),
        checkpoint: n('SELECT coalesce(max(position), 0) AS n FROM checkpoint'),
      };
    } finally {
      db.close();
    }
  };

  it("warms the live search index's thread up on a throwaway index of its own: the live index holds nothing of it", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-test-'));
    server = await startServer({ KB_WARMUP_REHEARSAL: 'on', KB_SEARCH_THREAD: 'worker' }, dataDir);
    await ready(server.url);
    // Before /readyz said ready (before: the thread ran cold code at the first upload).
    expect(await logged(/"msg":"search index thread warmed up"/)).toMatch(/"msg":"search index thread warmed up"/);
    expect(server.output()).not.toMatch(/start-up rehearsal (failed|did not close)/);
    await server.stop();
    expect(indexContents(dataDir)).toEqual({ chunks: 0, text: 0, workspaces: 0, models: 0, checkpoint: 0 });
    expect(eventCount(dataDir)).toBe(0);
    // With the index on the main thread there is no thread to warm (the rehearsal's own index ran this code there).
    server = await startServer({ KB_WARMUP_REHEARSAL: 'on', KB_SEARCH_THREAD: 'main' }, dataDir);
    await ready(server.url);
    expect(await logged(/"msg":"start-up rehearsal warmed up"/)).toMatch(/"msg":"start-up rehearsal warmed up"/);
    expect(server.output()).not.toMatch(/search index thread warmed up/);
  });

  it('runs before /readyz says ready, leaves nothing behind (a crashed one\'s directory included), and the server works as before', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-test-'));
    // What a rehearsal cut off by kill -9 would leave.
    fs.mkdirSync(path.join(dataDir, 'tmp', 'rehearsal-left-by-a-crash'), { recursive: true });
    fs.writeFileSync(path.join(dataDir, 'tmp', 'rehearsal-left-by-a-crash', 'events.db'), 'x');
    server = await startServer({ KB_WARMUP_REHEARSAL: 'on' }, dataDir);
    await ready(server.url);
    expect(await logged(/"msg":"start-up rehearsal warmed up"/)).toMatch(/"msg":"start-up rehearsal warmed up"/);
    expect(server.output()).not.toMatch(/start-up rehearsal (failed|did not close)/);
    // Its directory (and the crashed one's) is gone; nothing went to the server's outbox.
    expect(fs.readdirSync(path.join(dataDir, 'tmp')).filter((n) => n.startsWith('rehearsal-'))).toEqual([]);
    expect(fs.existsSync(path.join(dataDir, 'outbox')) ? fs.readdirSync(path.join(dataDir, 'outbox')) : []).toEqual([]);
    await server.stop();
    // Not one event in the server's log.
    expect(eventCount(dataDir)).toBe(0);

    server = await startServer({ KB_WARMUP_REHEARSAL: 'on' }, dataDir);
    await ready(server.url);
    // Its account is not the server's: the same address registers as a new user.
    const reg = await client(server.url).post('/v1/auth/register', { email: 'rehearsal@example.com', password: 'correct horse battery', name: 'R' });
    expect(reg.status).toBe(201);
    // And an upload goes through as usual.
    const u = await signUp(server.url);
    const ws = await u.api.post('/v1/workspaces', { name: 'After' });
    const fd = new FormData();
    fd.append('file', new Blob(['# Flaps\n\nFlaps raise the lift of a wing at low speed.']), 'flaps.md');
    const doc = await u.api.post(`/v1/workspaces/${ws.body.id}/documents`, fd);
    expect(doc.status).toBe(201);
    let status = '';
    for (let i = 0; i < 300 && status !== 'VERIFIED'; i++) {
      status = (await u.api.get(`/v1/documents/${doc.body.id}`)).body.processingStatus;
      if (status !== 'VERIFIED') await new Promise((res) => setTimeout(res, 50));
    }
    expect(status).toBe('VERIFIED');
    const hits = await u.api.post(`/v1/workspaces/${ws.body.id}/search`, { query: 'what raises the lift of a wing' });
    expect(hits.body.results.map((r: { documentId: string }) => r.documentId)).toEqual([doc.body.id]);
  });

  it('is skipped with KB_WARMUP_REHEARSAL=off', async () => {
    server = await startServer({ KB_WARMUP_REHEARSAL: 'off' });
    await ready(server.url);
    expect(server.output()).toMatch(/"msg":"document processing warmed up"/);
    expect(server.output()).not.toMatch(/rehearsal/);
  });
});
