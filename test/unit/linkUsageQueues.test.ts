import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { AppContext } from '../../src/app/context';
import { ReadStore } from '../../src/ports/readStore';
import { flushLinkUsage, linkUsageReport, recordLinkUse, storedQueryPage } from '../../queries/searchLink/linkUsage';
import { SearchLinkView, searchLinksCollection } from '../../projections/searchLink/searchLinkProjection';
import { deferred } from '../support/deferred';

const link = (id: string, workspaceId: string): SearchLinkView => ({
  id,
  workspaceId,
  tokenHash: `h-${id}`,
  tokenPrefix: 'p',
  name: '',
  allowedTags: [],
  expiresAt: null,
  historyMode: true,
  revoked: false,
  createdAt: '',
  updatedAt: '',
  revokedAt: null,
});

/**
 * A link's usage report and query history wait for that link's pending usage writes only: not
 * for another workspace's (one queue for every link made one tenant's public-search traffic delay
 * every tenant's reports). The other workspace's writes are held on a promise the test settles.
 */
describe('link usage writes: one queue per link', () => {
  let store: SqliteReadStore;
  let ctx: AppContext;
  const mine = link('11111111-1111-4111-8111-111111111111', 'ws-mine');
  const theirs = link('22222222-2222-4222-8222-222222222222', 'ws-theirs');

  beforeAll(async () => {
    store = new SqliteReadStore(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kb-usage-')), 'read.db'));
    ctx = {
      readStore: store,
      now: () => new Date('2030-01-01T00:10:00Z'),
      jwtSecret: 's',
      logger: pino({ level: 'silent' }),
      config: { readYourWritesMs: 5000 },
      eventStore: { headPosition: async () => 0 },
      runner: { waitFor: async () => true },
    } as unknown as AppContext;
    await store.transaction(async () => {
      await searchLinksCollection(store).put(mine);
      await searchLinksCollection(store).put(theirs);
    });
  });
  afterAll(async () => store.close());

  it("a report of this workspace's link answers while another workspace's usage writes are held", async () => {
    const gate = deferred();
    // The other workspace's writes cannot start their transaction until the gate opens.
    const held: ReadStore = { ...store, collection: store.collection.bind(store), transaction: async (fn) => gate.promise.then(() => store.transaction(fn)) } as ReadStore;
    const heldCtx = { ...ctx, readStore: held } as AppContext;
    let theirsWritten = false;
    const theirWrites = Promise.all([1, 2, 3].map((i) => recordLinkUse(heldCtx, theirs, { channel: 'http', latencyMs: 1, ok: true, ip: `10.0.0.${i}`, query: `q${i}` }))).then(() => {
      theirsWritten = true;
    });
    await recordLinkUse(ctx, mine, { channel: 'http', latencyMs: 2, ok: true, ip: '10.1.0.1', query: 'mine' });

    const report = await linkUsageReport(ctx, mine, 24);
    expect(report.totals.distinctClients).toBe(1);
    expect(report.storedQueries).toBe(1);
    expect((await storedQueryPage(ctx, mine.id, { limit: 10 })).data.map((d) => d.query)).toEqual(['mine']);
    await flushLinkUsage(mine.id);
    expect(theirsWritten).toBe(false);

    gate.resolve();
    await theirWrites;
    await flushLinkUsage(theirs.id);
    expect((await storedQueryPage(ctx, theirs.id, { limit: 10 })).data.map((d) => d.query).sort()).toEqual(['q1', 'q2', 'q3']);
    expect((await linkUsageReport(ctx, theirs, 24)).totals.distinctClients).toBe(3);
  });
});
