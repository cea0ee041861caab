import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { readModelProjection } from '../../src/core/projection';
import { ProjectionRunner } from '../../src/core/projectionRunner';
import { NewEvent } from '../../src/domain/event';
import { ReadStore } from '../../src/ports/readStore';

const root = path.resolve(__dirname, '..', '..');
const dist = (p: string) => JSON.stringify(path.join(root, 'dist', p));

/** One row per event, keyed by its position: a prefix of the log is exactly rows 1..checkpoint. */
const rowsProjection = (store: ReadStore) =>
  readModelProjection('rows', store, ['rows'], async (e, s) => {
    await s.collection<{ id: string; n: number }>('rows', [{ fields: ['n'] }]).put({ id: `r${e.position}`, n: e.position });
  });

/**
 * The child: the same projection, rebuilt in spans of 1,000 events on the writer thread
 * (the default), printing its position after each batch. It is killed with SIGKILL mid-way.
 */
const CHILD = `
const { SqliteEventStore } = require(${dist('src/adapters/sqlite/sqliteEventStore')});
const { SqliteReadStore } = require(${dist('src/adapters/sqlite/sqliteReadStore')});
const { readModelProjection } = require(${dist('src/core/projection')});
const { rebuildProjections } = require(${dist('src/core/projectionRunner')});
const [eventsFile, readFile] = process.argv.slice(1);
const events = new SqliteEventStore(eventsFile, { synchronous: 'normal' });
const store = new SqliteReadStore(readFile, { bulkWriter: 'thread' });
const p = readModelProjection('rows', store, ['rows'], async (e, s) => {
  await s.collection('rows', [{ fields: ['n'] }]).put({ id: 'r' + e.position, n: e.position });
});
rebuildProjections(events, [p], (i) => process.stdout.write(i.position + '\\n'), {
  batchSize: 500, eventsPerTransaction: 1000,
  transaction: (fn) => store.transaction(fn), bulkLoad: (fn) => store.bulkLoad(fn),
}).then(() => process.stdout.write('done\\n'));
`;

describe('rebuild killed half-way (kill -9) with spans committing on the writer thread', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-rebuild-crash-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('keeps whole spans with their checkpoint only, and the next start applies the rest', async () => {
    if (!fs.existsSync(path.join(root, 'dist/src/adapters/sqlite/readStoreWriter.js'))) throw new Error('build first: npx tsc -p tsconfig.build.json');
    const eventsFile = path.join(dir, 'events.db');
    const readFile = path.join(dir, 'read.db');
    const events = new SqliteEventStore(eventsFile, { synchronous: 'normal' });
    const total = 40_000;
    for (let i = 0; i < total / 200; i++) {
      const batch: NewEvent[] = Array.from({ length: 200 }, () => ({
        id: randomUUID(),
        type: 'RowAdded',
        data: { k: i },
        metadata: { actorId: 'test', authMethod: 'system', correlationId: randomUUID(), occurredAt: new Date().toISOString(), schemaVersion: 1 },
      }));
      await events.append(`rows-${i}`, batch, 'no_stream');
    }
    const head = await events.headPosition();
    // Live first: a store with every row, which the rebuild starts by clearing.
    const live = new SqliteReadStore(readFile);
    const runner = new ProjectionRunner(events, [rowsProjection(live)]);
    await runner.start();
    expect(await runner.waitFor(head, 60_000)).toBe(true);
    await runner.stop();
    await live.close();

    const child = spawn(process.execPath, ['-e', CHILD, eventsFile, readFile], { stdio: ['ignore', 'pipe', 'inherit'] });
    const killedAt = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        const positions = out.split('\n').filter((l) => /^\d+$/.test(l)).map(Number);
        const last = positions[positions.length - 1] ?? 0;
        if (last >= 8000) {
          child.kill('SIGKILL');
          resolve(last);
        }
      });
      child.on('exit', (code, signal) => {
        if (signal !== 'SIGKILL') reject(new Error(`child exited (${code}) before it was killed: ${out.slice(-200)}`));
      });
    });
    await new Promise((r) => child.once('close', r));

    const after = new SqliteReadStore(readFile);
    try {
      const checkpoint = await after.getCheckpoint('rows');
      const { n, max } = after.database.prepare('SELECT COUNT(*) AS n, MAX(c_n) AS max FROM rm_rows').get() as { n: number; max: number | null };
      // Killed mid-way: the rows are exactly those of the spans committed, with their checkpoint.
      expect(checkpoint).toBeLessThan(head);
      expect(checkpoint).toBeLessThanOrEqual(killedAt);
      expect(checkpoint % 1000).toBe(0);
      expect([n, max ?? 0]).toEqual([checkpoint, checkpoint]);

      // The next start detects it is behind and applies the rest (in spans, as a rebuild does).
      const p = rowsProjection(after);
      const next = new ProjectionRunner(events, [p], undefined, {
        batchTransaction: (fn) => after.transaction(fn),
        bulkLoad: (fn) => after.bulkLoad(fn),
        catchUp: { minEvents: 1, eventsPerTransaction: 1000 },
      });
      await next.start();
      expect(await next.waitFor(head, 60_000)).toBe(true);
      await next.stop();
      expect(await after.getCheckpoint('rows')).toBe(head);
      expect(after.database.prepare('SELECT COUNT(*) AS n, MIN(c_n) AS lo, MAX(c_n) AS hi FROM rm_rows').get()).toEqual({ n: head, lo: 1, hi: head });
      const indexes = (after.database.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'rm_rows' AND sql IS NOT NULL").all() as { name: string }[]).map((r) => r.name);
      expect(indexes).toEqual(['ix_rows_n']);
    } finally {
      await after.close();
      await events.close();
    }
  }, 120_000);
});
