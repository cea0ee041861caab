import Database from 'better-sqlite3';
import path from 'node:path';
import { client, signUp, startServer, TestServer } from '../support/server';
import { uploadVerified } from '../support/documents';
import { cli } from '../support/cli';

const METRICS_TOKEN = 'reembed-metrics-token-0123456789';

/**
 * Issue 13, re-embedding without downtime: a data dir built with GloVe-SIF (the default,
 * 100 dimensions) restarted with KB_EMBEDDINGS=use (USE-lite, 512). Searches answer
 * throughout, /readyz shows the progress, a kill -9 mid-way resumes, the switch drops the
 * old vectors; then the CLI changes back.
 */
describe('changing the embedding model without downtime', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  const TOPICS = [
    ['rudders.md', '# Rudders\n\nThe rudder turns the aircraft about its vertical axis, the yaw.', 'what turns the aircraft about its vertical axis'],
    ['flaps.md', '# Flaps\n\nFlaps raise the lift coefficient so the aircraft can land slowly.', 'how to land slowly with more lift'],
    ['pancakes.md', '# Pancakes\n\nMix flour, eggs and milk, then fry the batter in butter.', 'pancake batter flour eggs'],
    ['tides.md', '# Tides\n\nThe moon pulls the oceans and makes the tides rise and fall twice a day.', 'why do tides rise and fall'],
    ['volcanoes.md', '# Volcanoes\n\nMagma rises through the crust and erupts as lava and ash.', 'lava and ash erupting'],
    ['bees.md', '# Bees\n\nHoney bees collect nectar and pollen and dance to show where flowers are.', 'bees dancing to find flowers'],
  ] as const;

  async function readyz(base: string): Promise<{ status: number; body: any }> {
    const r = await client(base).get('/readyz');
    return { status: r.status, body: r.body };
  }

  async function waitReady(base: string): Promise<any> {
    for (let i = 0; i < 600; i++) {
      const r = await readyz(base);
      if (r.status === 200) return r.body;
      await new Promise((res) => setTimeout(res, 100));
    }
    throw new Error('never ready');
  }

  /** Reads the index file directly (server stopped): each stored vector's model and size. */
  function storedVectors(dataDir: string): { model: string | null; bytes: number | null }[] {
    const db = new Database(path.join(dataDir, 'search.db'), { readonly: true });
    try {
      return db.prepare('SELECT m.model_id AS model, length(c.vector) AS bytes FROM chunks c LEFT JOIN vector_models m ON m.num = c.model').all() as { model: string | null; bytes: number | null }[];
    } finally {
      db.close();
    }
  }

  function modelEvents(dataDir: string): string[] {
    const db = new Database(path.join(dataDir, 'events.db'), { readonly: true });
    try {
      return (db.prepare("SELECT type FROM events WHERE stream_id = 'embedding-model' ORDER BY position").all() as { type: string }[]).map((r) => r.type);
    } finally {
      db.close();
    }
  }

  it('searches answer from the old vectors while the new ones are built, a crash mid-way resumes, the switch drops the old vectors; the CLI changes back', async () => {
    server = await startServer();
    const dataDir = server.dataDir;
    const u = await signUp(server.url);
    const ws = (await u.api.post('/v1/workspaces', { name: 'Models' })).body.id as string;
    const ids = new Map<string, string>();
    for (const [name, text] of TOPICS) ids.set(name, await uploadVerified(u.api, ws, name, text));
    await server.stop();
    expect(new Set(storedVectors(dataDir).map((v) => `${v.model}/${v.bytes}`))).toEqual(new Set(['local:glove-sif-100d/400']));

    // Model B, slowed down (a pause between batches) so the change can be watched and interrupted.
    const env = { KB_EMBEDDINGS: 'use', KB_REEMBED_PAUSE_MS: '700', KB_RATE_LIMITS: 'off', KB_METRICS_TOKEN: METRICS_TOKEN };
    server = await startServer(env, dataDir);
    const login = async () => client(server!.url, (await client(server!.url).post('/v1/auth/login', { email: u.email, password: 'correct horse battery' })).body.accessToken);
    let api = await login();
    const searchFinds = async (query: string, file: string): Promise<void> => {
      const r = await api.post(`/v1/workspaces/${ws}/search`, { query, limit: 3 });
      expect(r.status).toBe(200);
      expect(r.body.results[0]?.documentId).toBe(ids.get(file));
    };
    let seen: any;
    for (let i = 0; i < 600; i++) {
      const r = await readyz(server.url);
      // Never down: once the models are loaded the service is ready, with the change's progress.
      if (r.status === 200 && r.body.reembedding) {
        seen = r.body.reembedding;
        if (seen.done >= 1) break;
      }
      await searchFinds(TOPICS[0][2], TOPICS[0][0]);
      await new Promise((res) => setTimeout(res, 100));
    }
    expect(seen).toMatchObject({ from: 'local:glove-sif-100d', to: 'local:use-lite-512', total: TOPICS.length });
    expect(seen.done).toBeGreaterThanOrEqual(1);
    expect(seen.done).toBeLessThan(TOPICS.length);
    // The same progress as Prometheus gauges, beside the model searches still use.
    const exposition = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    expect(exposition).toMatch(/^kb_embedding_model_active\{model="local:glove-sif-100d"\} 1$/m);
    expect(exposition).toMatch(new RegExp(`^kb_reembedding_documents\\{from="local:glove-sif-100d",to="local:use-lite-512",state="total"\\} ${TOPICS.length}$`, 'm'));
    const done = Number(/^kb_reembedding_documents\{[^}]*state="done"\} (\d+)$/m.exec(exposition)?.[1]);
    expect(done).toBeGreaterThanOrEqual(seen.done);
    expect(done).toBeLessThanOrEqual(TOPICS.length);

    // kill -9 mid-way, then start again: the change resumes where it was (slower still, so that the
    // CLI started below, a second or more on a loaded machine, finds it under way).
    await server.crash();
    server = await startServer({ ...env, KB_REEMBED_PAUSE_MS: '3000' }, dataDir);
    api = await login();
    await waitReady(server.url);
    const resumed = (await readyz(server.url)).body.reembedding;
    expect(resumed?.done).toBeGreaterThanOrEqual(seen.done);
    expect(resumed?.done).toBeLessThan(TOPICS.length);
    // The CLI follows the running server's change on /readyz (periodic lines when not a terminal).
    const watching = cli(dataDir, ['reembed', '--watch', server.url]);
    // A document uploaded during the change is searchable at once and gets the new vectors too.
    const late = await uploadVerified(api, ws, 'glaciers.md', '# Glaciers\n\nGlaciers carve valleys as the ice slowly flows downhill.');
    ids.set('glaciers.md', late);
    await searchFinds('ice carving valleys', 'glaciers.md');

    const progress: number[] = [resumed?.done ?? 0];
    for (let i = 0; i < 1200; i++) {
      const r = await readyz(server.url);
      expect(r.status).toBe(200);
      if (!r.body.reembedding) break;
      progress.push(r.body.reembedding.done);
      await searchFinds(TOPICS[2][2], TOPICS[2][0]);
      await new Promise((res) => setTimeout(res, 100));
    }
    expect((await readyz(server.url)).body.reembedding).toBeUndefined();
    expect(progress).toEqual([...progress].sort((a, b) => a - b)); // never goes back
    const watched = await watching;
    expect(watched.stderr).toMatch(/reembed local:glove-sif-100d → local:use-lite-512: \d+\/7 documents/);
    expect(watched.stdout).toMatch(/the model change is over/);
    expect(watched.code).toBe(0);
    for (const [name, , query] of TOPICS) await searchFinds(query, name);
    await server.stop();
    server = undefined;

    // Switched: every vector is USE-lite's (512 floats), none of GloVe's is left; one change, resumed, not restarted.
    expect(new Set(storedVectors(dataDir).map((v) => `${v.model}/${v.bytes}`))).toEqual(new Set(['local:use-lite-512/2048']));
    expect(modelEvents(dataDir)).toEqual(['EmbeddingModelChangeStarted', 'EmbeddingModelChangeCompleted']);

    // Back to GloVe, offline: the CLI runs the change to its end and prints its progress.
    const r = await cli(dataDir, ['reembed'], { KB_EMBEDDINGS: 'glove' });
    expect(r.stderr).toMatch(/reembed local:use-lite-512 → local:glove-sif-100d: \d+\/7 documents/);
    expect(r.stdout).toMatch(/re-embedded: searches now use local:glove-sif-100d/);
    expect(r.code).toBe(0);
    expect(new Set(storedVectors(dataDir).map((v) => `${v.model}/${v.bytes}`))).toEqual(new Set(['local:glove-sif-100d/400']));
    expect((await cli(dataDir, ['reembed'], { KB_EMBEDDINGS: 'glove' })).stdout).toMatch(/nothing to do/);
  }, 240_000);
});
