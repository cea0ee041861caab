import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { client, signUp, startServer, TestServer } from '../support/server';

const run = promisify(execFile);
const root = path.resolve(__dirname, '..', '..');
const env = { KB_RATE_LIMITS: 'off' };

function allFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? allFiles(path.join(dir, d.name)) : [path.join(dir, d.name)]));
}

async function until<T>(what: string, f: () => Promise<T | null | undefined | false>): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const v = await f();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('erasure is real', () => {
  let server: TestServer;
  afterAll(async () => {
    await server?.stop();
  });

  it('a deleted document is found nowhere: API, rebuilt read models, or any byte of the data dir', async () => {
    server = await startServer(env);
    const owner = await signUp(server.url, 'Eraser');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Erasure' })).body.id as string;
    // A unique word in a sentence, repeated so it lands in several chunks, the text and the index.
    const word = `zorblax${randomBytes(5).toString('hex')}`;
    const phrase = `The secret harbour code is ${word} and nobody may keep it`;
    const body = Array.from({ length: 40 }, (_, i) => `Paragraph ${i}. ${phrase}. Boats arrive at dawn and leave at dusk.`).join('\n\n');
    const kept = 'Kept notes about lighthouses and the tides of the northern bay.';
    const fd = (text: string, name: string) => {
      const f = new FormData();
      f.append('file', new Blob([text]), name);
      return f;
    };
    const up = await owner.api.post(`/v1/workspaces/${ws}/documents`, fd(body, 'secret.txt'));
    expect(up.status).toBe(201);
    const docId = up.body.id as string;
    const other = await owner.api.post(`/v1/workspaces/${ws}/documents`, fd(kept, 'kept.txt'));
    expect(other.status).toBe(201);
    for (const id of [docId, other.body.id]) {
      const d = await until('VERIFIED', async () => {
        const r = await owner.api.get(`/v1/workspaces/${ws}/documents/${id}`);
        return r.body.processingStatus === 'VERIFIED' || r.body.processingStatus === 'FAILED' ? r.body : null;
      });
      expect(d.processingStatus).toBe('VERIFIED');
    }
    const found = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: `harbour code ${word}`, limit: 5 });
    expect(found.status).toBe(200);
    expect(found.body.results[0].documentId).toBe(docId);
    expect(JSON.stringify(found.body)).toContain(word);

    // The text is sealed in the log from the start.
    const raw = new Database(path.join(server.dataDir, 'events.db'), { readonly: true });
    const rawText = (raw.prepare("SELECT group_concat(data, '') AS t FROM events").get() as { t: string }).t;
    raw.close();
    expect(rawText).not.toContain(word);

    expect((await owner.api.delete(`/v1/workspaces/${ws}/documents/${docId}`)).status).toBe(204);

    // Over the API: gone at once.
    expect((await owner.api.get(`/v1/workspaces/${ws}/documents/${docId}`)).status).toBe(404);
    const after = await owner.api.post(`/v1/workspaces/${ws}/search`, { query: `harbour code ${word}`, limit: 20 });
    expect(after.status).toBe(200);
    expect(JSON.stringify(after.body.results)).not.toContain(word);
    expect(after.body.results.every((r: { documentId: string }) => r.documentId !== docId)).toBe(true);
    expect(JSON.stringify((await owner.api.get(`/v1/workspaces/${ws}/documents`)).body)).not.toContain('secret.txt');
    // The audit trail of who deleted it remains.
    const audit = await owner.api.get(`/v1/workspaces/${ws}/audit?subject=${docId}&action=DocumentDeleted`);
    expect(audit.body.data).toHaveLength(1);
    expect(audit.body.data[0]).toMatchObject({ actor: { userId: owner.id, authMethod: 'session' }, subject: { type: 'document', id: docId } });
    expect(JSON.stringify(audit.body)).not.toContain(word);

    // The document's key is destroyed (a tombstone remains, the key bytes do not).
    await until('key destroyed', async () => {
      const keys = new Database(path.join(server.dataDir, 'keys.db'), { readonly: true });
      try {
        const row = keys.prepare('SELECT key, destroyed_at FROM data_keys WHERE document_id = ?').get(docId) as { key: Buffer | null; destroyed_at: string | null } | undefined;
        return row && row.key === null && row.destroyed_at !== null;
      } finally {
        keys.close();
      }
    });
    await server.stop();

    // Rebuilt read models and index from the log: still nothing.
    const rebuilt = await run(process.execPath, [path.join(root, 'dist/src/cli.js'), 'rebuild'], {
      cwd: root,
      env: { ...process.env, KB_DATA_DIR: server.dataDir, KB_LOG_LEVEL: 'silent', KB_JWT_SECRET: 'test-secret-test-secret-test-secret' },
    });
    expect(rebuilt.stdout).toMatch(/rebuilt/);
    const exported = await run(process.execPath, [path.join(root, 'dist/src/cli.js'), 'export'], {
      cwd: root,
      env: { ...process.env, KB_DATA_DIR: server.dataDir, KB_LOG_LEVEL: 'silent' },
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(exported.stdout).not.toContain(word);
    expect(exported.stdout).toContain('"erased":true');
    expect(exported.stdout).toContain('lighthouses');

    server = await startServer(env, server.dataDir);
    const api = client(server.url, owner.token);
    const again = await api.post(`/v1/workspaces/${ws}/search`, { query: `harbour code ${word}`, limit: 20 });
    expect(again.status).toBe(200);
    expect(JSON.stringify(again.body.results)).not.toContain(word);
    const keptHit = await api.post(`/v1/workspaces/${ws}/search`, { query: 'lighthouses tides', limit: 5 });
    expect(keptHit.body.results[0]?.documentId).toBe(other.body.id);
    await server.stop();

    // The stores' own compaction step (checkpoint, VACUUM), then not one byte of any file holds the word.
    const compacted = await run(process.execPath, [path.join(root, 'dist/src/cli.js'), 'compact'], {
      cwd: root,
      env: { ...process.env, KB_DATA_DIR: server.dataDir, KB_LOG_LEVEL: 'silent' },
    });
    expect(compacted.stdout).toContain('search.db');
    const needles = [Buffer.from(word, 'utf8'), Buffer.from(word.toUpperCase(), 'utf8'), Buffer.from(word, 'utf16le')];
    const leaks = allFiles(server.dataDir).filter((f) => {
      const bytes = fs.readFileSync(f);
      return needles.some((n) => bytes.includes(n));
    });
    expect(leaks).toEqual([]);
    // The other document's text is still readable (only the deleted one's key went).
    expect(allFiles(server.dataDir).some((f) => f.includes('blobs'))).toBe(true);
  });
});
