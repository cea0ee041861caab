import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { cli } from '../support/cli';
import { client, signUp, startServer, TestServer } from '../support/server';
import { uploadVerified } from '../support/documents';

/**
 * Query text a search link stores (history mode) is erased when the link is revoked, its
 * history turned off, or its workspace deleted, including the text of searches answered just
 * before the erasure whose record was still being written (they wrote it after the erasure,
 * and it was kept). Checked in every table of every database of the data dir, after a kill -9
 * right after the erasure, and after a rebuild of the projections from the log.
 */

const ENV = { KB_RATE_LIMITS: 'off' };
const SEARCHES = 40;

/** Rows of every table of every SQLite file in the data dir whose text holds `probe`. */
function rowsHolding(dir: string, probe: string): string[] {
  const found: string[] = [];
  for (const name of fs.readdirSync(dir)) {
    if (!name.endsWith('.db')) continue;
    const db = new Database(path.join(dir, name), { readonly: true, fileMustExist: true });
    try {
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
      for (const { name: table } of tables) {
        for (const row of db.prepare(`SELECT * FROM "${table}"`).iterate() as Iterable<Record<string, unknown>>) {
          const text = Object.values(row)
            .map((v) => (Buffer.isBuffer(v) ? v.toString('utf8') : String(v)))
            .join(' ');
          if (text.includes(probe)) found.push(`${name}:${table}`);
        }
      }
    } finally {
      db.close();
    }
  }
  return found;
}

describe('erasure of stored query text', () => {
  let server: TestServer;
  let dir: string;

  afterAll(async () => server?.stop());

  it('is complete after revocation and workspace deletion, a kill -9 and a rebuild', async () => {
    server = await startServer(ENV);
    dir = server.dataDir;
    const owner = await signUp(server.url, 'Owner');
    const kept = (await owner.api.post('/v1/workspaces', { name: 'Kept' })).body.id as string;
    const doomed = (await owner.api.post('/v1/workspaces', { name: 'Doomed' })).body.id as string;
    for (const ws of [kept, doomed]) await uploadVerified(owner.api, ws, 'doc.txt', 'Refunds are paid back within five business days.');
    const revoked = (await owner.api.post(`/api/workspaces/${kept}/public-links`, { historyMode: true })).body;
    const stays = (await owner.api.post(`/api/workspaces/${kept}/public-links`, { historyMode: true })).body;
    const turnedOff = (await owner.api.post(`/api/workspaces/${kept}/public-links`, { historyMode: true })).body;
    const gone = (await owner.api.post(`/api/workspaces/${doomed}/public-links`, { historyMode: true })).body;
    const anon = client(server.url);

    // Stored while the link lives.
    await anon.get(`/public/${stays.token}/search?q=kept-probe-query`);
    await anon.get(`/public/${revoked.token}/search?q=revoked-probe-first`);
    const before = await owner.api.get(`/api/workspaces/${kept}/public-links/${revoked.id}/queries`);
    expect(before.body.data.map((r: { query: string }) => r.query)).toEqual(['revoked-probe-first']);

    // Searches answered around the revocation: the erasure runs while their records are queued.
    const burst = (token: string, probe: string) => Array.from({ length: SEARCHES }, (_, i) => anon.get(`/public/${token}/search?q=${probe}-${i}`));
    const revokeBurst = burst(revoked.token, 'revoked-probe');
    await revokeBurst[0];
    expect((await owner.api.delete(`/api/workspaces/${kept}/public-links/${revoked.id}`)).status).toBe(204);
    await Promise.all(revokeBurst);

    // The same around turning a link's history off (the link stays; what it kept goes).
    const offBurst = burst(turnedOff.token, 'history-off-probe');
    await offBurst[0];
    expect((await owner.api.patch(`/api/workspaces/${kept}/public-links/${turnedOff.id}`, { historyMode: false })).status).toBe(200);
    await Promise.all(offBurst);

    // The same around the workspace's deletion, and the server killed right after it.
    const deleteBurst = burst(gone.token, 'deleted-probe');
    await deleteBurst[0];
    expect((await owner.api.delete(`/v1/workspaces/${doomed}`)).status).toBe(204);
    await Promise.all(deleteBurst);
    await server.crash();

    server = await startServer(ENV, dir);
    await server.stop(); // a clean stop writes whatever was queued
    for (const probe of ['revoked-probe', 'history-off-probe', 'deleted-probe']) expect(rowsHolding(dir, probe)).toEqual([]);
    // Only what should stay: the living link's query.
    const keptRows = rowsHolding(dir, 'kept-probe-query');
    expect(keptRows.length).toBe(1);
    expect(keptRows[0]).toMatch(/link_query_history$/);

    // A rebuild of every projection from the log brings none of it back.
    const rebuilt = await cli(dir, ['rebuild']);
    expect(rebuilt.code).toBe(0);
    for (const probe of ['revoked-probe', 'history-off-probe', 'deleted-probe']) expect(rowsHolding(dir, probe)).toEqual([]);

    server = await startServer(ENV, dir);
    const api = client(server.url, owner.token);
    const usage = await api.get(`/api/workspaces/${kept}/public-links/${revoked.id}/usage`);
    expect(usage.body.storedQueries).toBe(0);
    // Counts without text are kept: the revoked link's uses are still counted.
    expect(usage.body.totals.requests).toBeGreaterThanOrEqual(1);
    const queries = await api.get(`/api/workspaces/${kept}/public-links/${revoked.id}/queries`);
    expect(JSON.stringify(queries.body)).not.toContain('revoked-probe');
    const offUsage = await api.get(`/api/workspaces/${kept}/public-links/${turnedOff.id}/usage`);
    expect(offUsage.body).toMatchObject({ historyMode: false, storedQueries: 0 });
    expect(offUsage.body.totals.requests).toBe(SEARCHES);
    const analytics = await api.get(`/v1/workspaces/${kept}/analytics`);
    expect(analytics.status).toBe(200);
    expect(JSON.stringify(analytics.body)).not.toMatch(/revoked-probe|history-off-probe|deleted-probe/);
    const audit = await api.get(`/v1/workspaces/${kept}/audit`);
    expect(audit.status).toBe(200);
    expect(JSON.stringify(audit.body)).not.toMatch(/probe/);
    expect((await api.get(`/v1/workspaces/${doomed}/analytics`)).status).toBe(404);
  }, 60_000);
});
