import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { AppContext } from '../../src/app/context';
import { flushLinkUsage, recordLinkUse, sweepQueryHistory } from '../../queries/searchLink/linkUsage';
import { SearchLinkView, searchLinksCollection } from '../../projections/searchLink/searchLinkProjection';

const link = (historyMode: boolean): SearchLinkView => ({
  id: historyMode ? 'on' : 'off',
  workspaceId: 'ws',
  tokenHash: historyMode ? 'h-on' : 'h-off',
  tokenPrefix: 'p',
  name: '',
  allowedTags: [],
  expiresAt: null,
  historyMode,
  revoked: false,
  createdAt: '',
  updatedAt: '',
  revokedAt: null,
});

describe('link query history retention', () => {
  let store: SqliteReadStore;
  let clock = new Date('2030-01-01T00:00:00Z');
  let ctx: AppContext;

  beforeAll(() => {
    store = new SqliteReadStore(path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kb-hist-')), 'read.db'));
    ctx = { readStore: store, now: () => clock, jwtSecret: 's', logger: pino({ level: 'silent' }) } as unknown as AppContext;
  });
  afterAll(async () => store.close());

  it('keeps query text only for historyMode ON links and deletes it after 90 days', async () => {
    // The use is written against the link as the read store holds it when it is written.
    await store.transaction(async () => {
      await searchLinksCollection(store).put(link(true));
      await searchLinksCollection(store).put(link(false));
    });
    await recordLinkUse(ctx, link(true), { channel: 'http', latencyMs: 3, ok: true, query: 'old question' });
    await recordLinkUse(ctx, link(false), { channel: 'http', latencyMs: 3, ok: true, query: 'never kept' });
    clock = new Date('2030-03-01T00:00:00Z');
    await recordLinkUse(ctx, link(true), { channel: 'mcp', latencyMs: 5, ok: true, query: 'recent question' });
    await flushLinkUsage();
    const history = store.collection<{ id: string; query: string; linkId: string }>('link_query_history');
    expect((await history.find({})).map((h) => h.query).sort()).toEqual(['old question', 'recent question']);
    clock = new Date('2030-04-01T00:00:01Z'); // 90 days + 1 s after the first
    expect(await sweepQueryHistory(ctx)).toBe(1);
    expect((await history.find({})).map((h) => h.query)).toEqual(['recent question']);
    const usage = store.collection<{ id: string; count: number; linkId: string }>('link_usage');
    expect((await usage.find({ linkId: 'off' })).reduce((n, b) => n + b.count, 0)).toBe(1);
  });
});
