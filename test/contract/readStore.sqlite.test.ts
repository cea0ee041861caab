import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { readStoreContract } from './readStore.contract';

const dir = mkdtempSync(path.join(tmpdir(), 'kb-rs-contract-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A bulk load's transactions commit on a writer thread by default; `inline` commits them on the store's own connection.
readStoreContract('SqliteReadStore', async () => new SqliteReadStore(path.join(dir, `${randomUUID()}.db`)));
readStoreContract('SqliteReadStore, bulk writer inline', async () => new SqliteReadStore(path.join(dir, `${randomUUID()}.db`), { bulkWriter: 'inline' }));

describe('SqliteReadStore bulk load: deferred indexes', () => {
  const indexesOf = (store: SqliteReadStore, table: string): string[] =>
    (store.database.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL ORDER BY name").all(table) as { name: string }[]).map((r) => r.name);

  it('drops the non-unique indexes of empty collections only, and builds them at the end', async () => {
    const store = new SqliteReadStore(path.join(dir, `${randomUUID()}.db`));
    try {
      const empty = store.collection<{ id: string; w: string; e: string }>('bulk_empty', [{ fields: ['w'] }, { fields: ['e'], unique: true }]);
      const full = store.collection<{ id: string; w: string }>('bulk_full', [{ fields: ['w'] }]);
      await full.put({ id: 'x', w: 'a' });
      const before = { empty: indexesOf(store, 'rm_bulk_empty'), full: indexesOf(store, 'rm_bulk_full') };
      expect(before.empty).toEqual(['ix_bulk_empty_e', 'ix_bulk_empty_w']);
      await store.bulkLoad(async () => {
        // The unique index stays (it refuses writes as they are made); the other waits.
        expect(indexesOf(store, 'rm_bulk_empty')).toEqual(['ix_bulk_empty_e']);
        expect(indexesOf(store, 'rm_bulk_full')).toEqual(before.full);
        await store.transaction(async () => {
          for (let i = 0; i < 300; i++) await empty.put({ id: `r${i}`, w: `w${i % 7}`, e: `e${i}` });
        });
      });
      expect(indexesOf(store, 'rm_bulk_empty')).toEqual(before.empty);
      expect(await empty.count({ w: 'w3' })).toBe(43);
      // The query plan uses the rebuilt index.
      const plan = store.database.prepare("EXPLAIN QUERY PLAN SELECT doc FROM rm_bulk_empty WHERE c_w = 'w3'").all() as { detail: string }[];
      expect(plan.map((r) => r.detail).join(' ')).toMatch(/ix_bulk_empty_w/);
    } finally {
      await store.close();
    }
  });

  it('a query by filter during the load builds its collection\'s indexes first', async () => {
    const store = new SqliteReadStore(path.join(dir, `${randomUUID()}.db`));
    try {
      const c = store.collection<{ id: string; w: string }>('bulk_q', [{ fields: ['w'] }]);
      await store.bulkLoad(async () => {
        expect(indexesOf(store, 'rm_bulk_q')).toEqual([]);
        await store.transaction(async () => {
          await c.put({ id: 'a', w: '1' });
          expect(await c.find({ w: '1' })).toEqual([{ id: 'a', w: '1' }]);
        });
        expect(indexesOf(store, 'rm_bulk_q')).toEqual(['ix_bulk_q_w']);
      });
      expect(indexesOf(store, 'rm_bulk_q')).toEqual(['ix_bulk_q_w']);
    } finally {
      await store.close();
    }
  });

  it('buffers at most its cap of JSON: beyond it, rows are written out inside the transaction (and roll back with it)', async () => {
    const store = new SqliteReadStore(path.join(dir, `${randomUUID()}.db`), { bulkBufferChars: 2000 });
    try {
      const c = store.collection<{ id: string; text: string }>('bulk_cap');
      const inTable = () => (store.database.prepare('SELECT COUNT(*) AS n FROM rm_bulk_cap').get() as { n: number }).n;
      await store.bulkLoad(async () => {
        await expect(
          store.transaction(async () => {
            for (let i = 0; i < 50; i++) await c.put({ id: `r${i}`, text: 'x'.repeat(100) });
            // About 16 rows (of ~120 characters) fit under the cap: written out each time it filled.
            expect(inTable()).toBe(34);
            expect(inTable()).toBeLessThan(50);
            throw new Error('roll back');
          }),
        ).rejects.toThrow('roll back');
        expect(inTable()).toBe(0);
        expect(await c.get('r49')).toBeNull();
        await store.transaction(async () => {
          for (let i = 0; i < 50; i++) await c.put({ id: `r${i}`, text: 'y'.repeat(100) });
        });
      });
      expect(inTable()).toBe(50);
      expect((await c.get('r49'))?.text).toBe('y'.repeat(100));
    } finally {
      await store.close();
    }
  });

  it('a unique index refuses a duplicate inside a bulk load\'s transaction too, when the write is made (not buffered)', async () => {
    const store = new SqliteReadStore(path.join(dir, `${randomUUID()}.db`));
    try {
      const c = store.collection<{ id: string; email: string }>('bulk_unique', [{ fields: ['email'], unique: true }]);
      await store.bulkLoad(async () => {
        await store.transaction(async () => {
          await c.put({ id: 'u1', email: 'a@example.com' });
          const refused = await c.put({ id: 'u2', email: 'a@example.com' }).then(
            () => null,
            (err: unknown) => err,
          );
          expect(refused).not.toBeNull();
        });
      });
      expect((await c.find({})).map((d) => d.id)).toEqual(['u1']);
    } finally {
      await store.close();
    }
  });

  it('a process that dies during a bulk load leaves a store whose next open has every index again', async () => {
    const file = path.join(dir, `${randomUUID()}.db`);
    const dying = new SqliteReadStore(file);
    const c = dying.collection<{ id: string; w: string }>('bulk_crash', [{ fields: ['w'] }]);
    await dying
      .bulkLoad(async () => {
        await dying.transaction(async () => c.put({ id: 'a', w: '1' }));
        expect(indexesOf(dying, 'rm_bulk_crash')).toEqual([]);
        // The process dies here: nothing after this runs on this connection.
        dying.database.close();
        throw new Error('killed');
      })
      .catch(() => undefined);
    const next = new SqliteReadStore(file);
    try {
      const again = next.collection<{ id: string; w: string }>('bulk_crash', [{ fields: ['w'] }]);
      expect(indexesOf(next, 'rm_bulk_crash')).toEqual(['ix_bulk_crash_w']);
      expect(await again.find({ w: '1' })).toEqual([{ id: 'a', w: '1' }]);
    } finally {
      await next.close();
    }
  });
});

describe('SqliteReadStore layout: indexed fields in columns of their own', () => {
  it('queries and sorts through the columns, which every write keeps equal to the document', async () => {
    const store = new SqliteReadStore(path.join(dir, `${randomUUID()}.db`));
    try {
      const c = store.collection<{ id: string; w: string | null; n?: number; ok: boolean }>('cols', [{ fields: ['w', 'n'] }, { fields: ['ok'] }]);
      await c.put({ id: 'a', w: 'x', n: 2, ok: true });
      await c.put({ id: 'b', w: null, ok: false });
      await c.put({ id: 'a', w: 'y', n: 1, ok: false });
      const rows = store.database.prepare('SELECT id, c_w, c_n, c_ok FROM rm_cols ORDER BY id').raw().all();
      expect(rows).toEqual([
        ['a', 'y', 1, 0],
        ['b', null, null, 0],
      ]);
      const plan = (store.database.prepare("EXPLAIN QUERY PLAN SELECT doc FROM rm_cols WHERE c_w = 'y' ORDER BY c_n").all() as { detail: string }[]).map((r) => r.detail).join(' ');
      expect(plan).toMatch(/ix_cols_w_n/);
      expect((await c.find({ ok: false }, { sort: [{ field: 'n', direction: 'desc' }] })).map((d) => d.id)).toEqual(['a', 'b']);
      expect(await c.count({ w: 'y', n: { $lt: 2 } })).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('migrates a store of the earlier layout (expression indexes on json_extract) in place: columns added and filled, indexes on them', async () => {
    const file = path.join(dir, `${randomUUID()}.db`);
    const Database = (await import('better-sqlite3')).default;
    const old = new Database(file);
    old.exec('CREATE TABLE rm_legacy (id TEXT PRIMARY KEY, doc TEXT NOT NULL)');
    old.exec("CREATE INDEX ix_legacy_w ON rm_legacy (json_extract(doc, '$.w'))");
    const insert = old.prepare('INSERT INTO rm_legacy (id, doc) VALUES (?, ?)');
    insert.run('a', JSON.stringify({ id: 'a', w: 'one', flag: true }));
    insert.run('b', JSON.stringify({ id: 'b', w: 'two', flag: false }));
    insert.run('c', JSON.stringify({ id: 'c', flag: true }));
    old.close();
    const store = new SqliteReadStore(file);
    try {
      const c = store.collection<{ id: string; w?: string; flag: boolean }>('legacy', [{ fields: ['w'] }, { fields: ['flag'] }]);
      expect(store.database.prepare('SELECT id, c_w, c_flag FROM rm_legacy ORDER BY id').raw().all()).toEqual([
        ['a', 'one', 1],
        ['b', 'two', 0],
        ['c', null, 1],
      ]);
      const sql = (store.database.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'rm_legacy' AND sql IS NOT NULL ORDER BY name").all() as { name: string; sql: string }[]);
      expect(sql.map((r) => r.name)).toEqual(['ix_legacy_flag', 'ix_legacy_w']);
      expect(sql.map((r) => r.sql).join(' ')).not.toMatch(/json_extract/);
      expect((await c.find({ flag: true })).map((d) => d.id)).toEqual(['a', 'c']);
      expect((await c.find({ w: 'two' })).map((d) => d.id)).toEqual(['b']);
      // A second open finds nothing left to migrate.
      await store.close();
      const again = new SqliteReadStore(file);
      const c2 = again.collection<{ id: string; w?: string; flag: boolean }>('legacy', [{ fields: ['w'] }]);
      await c2.put({ id: 'd', w: 'three', flag: false });
      // A column another caller added is kept up to date by every write.
      expect(again.database.prepare("SELECT c_w, c_flag FROM rm_legacy WHERE id = 'd'").raw().get()).toEqual(['three', 0]);
      await again.close();
    } catch (err) {
      await store.close().catch(() => undefined);
      throw err;
    }
  });
});

describe('SqliteReadStore bulk load on a writer thread', () => {
  type Row = { id: string; w: string; n: number };
  const open = () => new SqliteReadStore(path.join(dir, `${randomUUID()}.db`));
  const inTable = (store: SqliteReadStore, table: string): string[] =>
    (store.database.prepare(`SELECT id FROM ${table} ORDER BY id`).raw().all() as [string][]).map((r) => r[0]);

  it('the next spans read the rows and checkpoints of the spans before, by id, by ids and by filter, and the load ends with all of them stored', async () => {
    const store = open();
    try {
      const c = store.collection<Row>('wt_rows', [{ fields: ['w'] }]);
      const p = `proj-${randomUUID()}`;
      await store.bulkLoad(async () => {
        for (let span = 0; span < 20; span++) {
          await store.transaction(async () => {
            // Every span reads what the span before wrote (maybe not committed yet).
            expect(await store.getCheckpoint(p)).toBe(span);
            if (span > 0) {
              expect((await c.get(`r${span - 1}`))?.n).toBe(span - 1);
              expect((await c.getMany([`r${span - 1}`, 'nope'])).map((d) => d.id)).toEqual([`r${span - 1}`]);
              const before = await c.get(`r${Math.floor((span - 1) / 2)}`);
              if (span % 2 === 0 && before) await c.put({ ...before, n: before.n + 100 });
            }
            await c.put({ id: `r${span}`, w: `w${span % 3}`, n: span });
            if (span === 7) await c.delete('r3');
            // A query by filter in one span: it sees everything so far.
            if (span === 11) expect((await c.find({ w: 'w1' })).map((d) => d.id)).toEqual(['r1', 'r10', 'r4', 'r7']);
            await store.setCheckpoint(p, span + 1);
          });
        }
      });
      expect(await store.getCheckpoint(p)).toBe(20);
      expect(inTable(store, 'rm_wt_rows')).toHaveLength(19);
      expect((await c.get('r3'))).toBeNull();
      expect((await c.get('r4'))?.n).toBe(104);
      expect(await c.count({ w: 'w1' })).toBe(7);
    } finally {
      await store.close();
    }
  });

  it('a transaction of another flow during the load (another consumer) waits for the thread and has committed when it returns', async () => {
    const file = path.join(dir, `${randomUUID()}.db`);
    const store = new SqliteReadStore(file);
    const Database = (await import('better-sqlite3')).default;
    const elsewhere = new Database(file, { readonly: true });
    try {
      const rows = store.collection<Row>('wt_flow', [{ fields: ['w'] }]);
      const other = store.collection<Row>('wt_flow_other');
      // Started outside the load's function (its timer belongs to this flow, not the load's).
      const outside = new Promise((r) => setTimeout(r, 30)).then(() =>
        store.transaction(async () => {
          await other.put({ id: 'x', w: 'o', n: 1 });
          await store.setCheckpoint('other-consumer', 5);
          // Its own transaction on the store's connection (not a span for the thread).
          expect(store.database.inTransaction).toBe(true);
        }),
      );
      await store.bulkLoad(async () => {
        for (let i = 0; i < 30; i++) {
          await store.transaction(async () => {
            for (let k = 0; k < 50; k++) await rows.put({ id: `r${i}-${k}`, w: 'a', n: k });
            await store.setCheckpoint('loader', i + 1);
          });
          if (i === 10) {
            await outside;
            // Committed on the store's connection as it returned: another connection sees it.
            expect(elsewhere.prepare("SELECT doc FROM rm_wt_flow_other WHERE id = 'x'").get()).toBeDefined();
            expect(elsewhere.prepare("SELECT position FROM checkpoints WHERE projection = 'other-consumer'").get()).toEqual({ position: 5 });
          }
        }
      });
      expect(await store.getCheckpoint('loader')).toBe(30);
      expect(await rows.count({ w: 'a' })).toBe(1500);
    } finally {
      elsewhere.close();
      await store.close();
    }
  });

  it('a span that writes to a collection with a unique index runs on the store\'s connection, which still refuses a duplicate', async () => {
    const store = open();
    try {
      const users = store.collection<{ id: string; email: string }>('wt_users', [{ fields: ['email'], unique: true }]);
      const other = store.collection<Row>('wt_other', [{ fields: ['w'] }]);
      await store.bulkLoad(async () => {
        await store.transaction(async () => other.put({ id: 'o1', w: 'a', n: 1 }));
        await store.transaction(async () => {
          await other.put({ id: 'o2', w: 'a', n: 2 });
          await users.put({ id: 'u1', email: 'a@example.com' });
          const refused = await users.put({ id: 'u2', email: 'a@example.com' }).then(
            () => null,
            (err: unknown) => err,
          );
          expect(refused).not.toBeNull();
        });
        await store.transaction(async () => other.put({ id: 'o3', w: 'b', n: 3 }));
      });
      expect(inTable(store, 'rm_wt_users')).toEqual(['u1']);
      expect(inTable(store, 'rm_wt_other')).toEqual(['o1', 'o2', 'o3']);
    } finally {
      await store.close();
    }
  });

  it('a span the thread fails to store ends the load with its error, keeps none of it nor any span after it, and leaves the store usable', async () => {
    const file = path.join(dir, `${randomUUID()}.db`);
    const store = new SqliteReadStore(file);
    try {
      const kept = store.collection<Row>('wt_kept');
      store.collection<Row>('wt_doomed');
      const doomed = store.collection<Row>('wt_doomed');
      const p = `proj-${randomUUID()}`;
      const Database = (await import('better-sqlite3')).default;
      const load = store.bulkLoad(async () => {
        await store.transaction(async () => {
          await kept.put({ id: 'k1', w: 'a', n: 1 });
          await store.setCheckpoint(p, 1);
        });
        // Another connection drops a table under the load: the thread's next span fails.
        await new Promise((r) => setTimeout(r, 50));
        const other = new Database(file);
        other.pragma('busy_timeout = 5000');
        other.exec('DROP TABLE rm_wt_doomed');
        other.close();
        await store.transaction(async () => {
          await kept.put({ id: 'k2', w: 'a', n: 2 });
          await doomed.put({ id: 'd1', w: 'a', n: 2 });
          await store.setCheckpoint(p, 2);
        });
        for (let i = 3; i < 10; i++) {
          await store.transaction(async () => {
            await kept.put({ id: `k${i}`, w: 'a', n: i });
            await store.setCheckpoint(p, i);
          });
        }
      });
      await expect(load).rejects.toThrow(/no such table/);
      expect(inTable(store, 'rm_wt_kept')).toEqual(['k1']);
      expect(await store.getCheckpoint(p)).toBe(1);
      expect(await kept.get('k2')).toBeNull();
      await store.transaction(async () => kept.put({ id: 'k2', w: 'b', n: 2 }));
      expect(inTable(store, 'rm_wt_kept')).toEqual(['k1', 'k2']);
    } finally {
      await store.close();
    }
  });
});
