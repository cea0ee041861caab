import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cli, root } from '../support/cli';
import { History, makeHistory } from './analyticsCli.support';

/** The queries shown in the README, between <!-- analytics-queries --> markers: each is run here. */
function readmeQueries(): { title: string; sql: string }[] {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const section = readme.split('<!-- analytics-queries -->')[1] ?? '';
  return [...section.matchAll(/```sql\n-- (.+)\n([\s\S]*?)```/g)].map((m) => ({ title: m[1], sql: m[2].trim() }));
}

describe('npm run kb -- export --format parquet, and kb sql', () => {
  let h: History;
  let dir: string;
  const run = async (query: string, csv: boolean) => {
    const r = await cli(h.dataDir, ['sql', query, '--dir', dir, ...(csv ? ['--csv'] : [])]);
    if (r.code !== 0) throw new Error(`sql failed: ${r.stderr}`);
    return r.stdout;
  };
  const sql = async (query: string): Promise<string[]> => (await run(query, true)).trim().split('\r\n');

  beforeAll(async () => {
    h = await makeHistory();
    dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kb-pq-')), 'export');
  }, 120_000);

  it('writes events.parquet with typed envelope columns and one flattened file per event type', async () => {
    const r = await cli(h.dataDir, ['export', '--format', 'parquet', '--out', dir]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/exported \d+ events to/);
    expect(fs.statSync(path.join(dir, 'events.parquet')).mode & 0o777).toBe(0o600);
    const ndjson = (await cli(h.dataDir, ['export'])).stdout.trim().split('\n');
    expect(await sql('SELECT count(*) FROM events')).toEqual(['count_star()', String(ndjson.length)]);
    const types = (await sql("SELECT column_name || ':' || column_type FROM (DESCRIBE events)")).slice(1);
    expect(types).toEqual(
      expect.arrayContaining(['position:BIGINT', 'type:VARCHAR', 'stream:VARCHAR', 'revision:BIGINT', 'occurredAt:TIMESTAMP WITH TIME ZONE', 'actorId:VARCHAR', 'authMethod:VARCHAR', 'workspaceId:VARCHAR', 'payload:JSON']),
    );
    expect(await sql('SELECT title FROM DocumentUploaded ORDER BY position')).toEqual(['title', 'kept.txt', 'secret.txt', 'encrypted.pdf', 'empty.txt']);
    // No text, chunks or vectors in the flattened tables; the erased document's text is gone from the payload too.
    expect((await sql("SELECT column_name FROM (DESCRIBE DocumentChunked) WHERE column_name IN ('chunks', 'content')")).slice(1)).toEqual([]);
    expect((await sql(`SELECT count(*) FROM events WHERE CAST(payload AS VARCHAR) LIKE '%${h.secretWord}%'`))[1]).toBe('0');
    expect((await sql("SELECT count(*) FROM events WHERE CAST(payload AS VARCHAR) LIKE '%lighthouses%'"))[1]).not.toBe('0');
    // Credentials stay redacted.
    expect((await sql("SELECT DISTINCT passwordHash FROM UserRegistered"))[1]).toBe('[redacted]');
  });

  it('answers the README queries', async () => {
    const queries = readmeQueries();
    expect(queries.map((q) => q.title)).toEqual([
      'Documents uploaded per week by workspace',
      'Processing failures by error code',
      'Time from upload to VERIFIED (seconds)',
      'Searches per link per day',
      'Set edits by actor',
    ]);
    const [perWeek, failures, toVerified, perLink, setEdits] = await Promise.all(queries.map((q) => sql(q.sql)));
    expect(perWeek.slice(1).map((l) => l.split(',')[0] + ',' + l.split(',')[2]).sort()).toEqual([`${h.wsA},2`, `${h.wsB},2`].sort());
    expect(failures).toEqual(['code,failures,documents', 'ENCRYPTED,1,1', 'NO_TEXT,1,1']);
    expect(toVerified[0]).toBe('workspaceId,documents,p50_s,p95_s');
    expect(toVerified.slice(1).map((l) => l.split(',').slice(0, 2).join(','))).toEqual([`${h.wsA},2`]);
    expect(perLink.slice(1).map((l) => l.split(',').filter((_, i) => i !== 1).join(','))).toEqual([`${h.linkId},3,1`]);
    expect(setEdits).toEqual(['actorId,edits,sets', `${h.ownerId},2,1`]);
  });

  it('prints a table, and reports a bad query or a missing export clearly', async () => {
    expect(await run('SELECT 1 AS one', false)).toBe('one\n---\n1\n(1 row)\n');
    const bad = await cli(h.dataDir, ['sql', 'SELECT nope', '--dir', dir]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/Binder Error/);
    const none = await cli(h.dataDir, ['sql', 'SELECT 1', '--dir', path.join(dir, 'missing')]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no export in .* run npm run kb -- export --format parquet/);
  });
});
