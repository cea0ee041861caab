import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { client, signUp, startServer } from '../support/server';

const root = path.resolve(__dirname, '..', '..');

/** Everything a user can read back about their world, for before/after comparisons. */
async function snapshot(url: string, token: string) {
  const api = client(url, token);
  const workspaces = (await api.get('/v1/workspaces')).body as { id: string }[];
  const details = [];
  for (const w of workspaces) {
    details.push({
      workspace: (await api.get(`/v1/workspaces/${w.id}`)).body,
      members: (await api.get(`/v1/workspaces/${w.id}/members`)).body,
      tags: (await api.get(`/v1/workspaces/${w.id}/tags`)).body,
    });
  }
  return { workspaces, details, keys: (await api.get('/v1/api-keys')).body.data.map((k: { id: string }) => k.id) };
}

describe('nothing accepted is lost', () => {
  it('every answered write survives kill -9, a restart, and a projection rebuild', async () => {
    let server = await startServer({ KB_RATE_LIMITS: 'off' });
    const dataDir = server.dataDir;
    const owner = await signUp(server.url, 'Durable');
    const friend = await signUp(server.url, 'Friend');
    const ws = (await owner.api.post('/v1/workspaces', { name: 'Kept' })).body.id;
    await owner.api.post(`/v1/workspaces/${ws}/members`, { userId: friend.id, role: 'ADMIN' });
    const key = (await owner.api.post('/v1/api-keys', { name: 'robot' })).body.key as string;
    // A burst of concurrent writes, each answered before the crash.
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => owner.api.post(`/v1/workspaces/${ws}/tags`, { name: `tag-${i}`, color: '#123456' })),
    );
    expect(answers.every((a) => a.status === 201)).toBe(true);
    const last = await owner.api.post('/v1/workspaces', { name: 'Written just before the crash' });
    expect(last.status).toBe(201);
    const before = await snapshot(server.url, owner.token);
    await server.crash();

    server = await startServer({ KB_RATE_LIMITS: 'off' }, dataDir);
    expect(await snapshot(server.url, owner.token)).toEqual(before);
    expect((await snapshot(server.url, owner.token)).details[0].tags.data).toHaveLength(40);
    expect((await client(server.url, key).get('/v1/auth/me')).status).toBe(200);
    // The refresh token issued before the crash still works.
    expect((await client(server.url).post('/v1/auth/refresh', { refreshToken: owner.refreshToken })).status).toBe(200);
    const afterRestart = await snapshot(server.url, owner.token);
    await server.stop();

    const out = execFileSync(process.execPath, [path.join(root, 'dist/src/cli.js'), 'rebuild'], {
      cwd: root,
      env: { ...process.env, KB_DATA_DIR: dataDir, KB_LOG_LEVEL: 'silent' },
    }).toString();
    expect(out).toMatch(/rebuilt .*users.*workspaces.*: \d+ events applied/);

    server = await startServer({ KB_RATE_LIMITS: 'off' }, dataDir);
    expect(await snapshot(server.url, owner.token)).toEqual(afterRestart);
    await server.stop();
  });
});
