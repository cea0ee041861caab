import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { AppContext } from '../../src/app/context';
import { RecordedEvent } from '../../src/domain/event';
import { SearchLinkCreated } from '../../src/domain/searchLink/events';
import { summarize } from '../../src/audit/summary';
import { tokenVault } from '../../src/security/tokenVault';
import { sha256Hex } from '../../src/util/crypto';
import { searchLinkProjection, searchLinksCollection } from '../../projections/searchLink/searchLinkProjection';
import { searchLinkView } from '../../queries/searchLink/searchLinkQueries';

const BASE = 'https://kb.example.com';
let position = 0;
const recorded = (e: SearchLinkCreated): RecordedEvent => ({
  ...e,
  id: `e${++position}`,
  streamId: `searchlink-${e.data.linkId}`,
  revision: 0,
  position,
  metadata: { actorId: 'u', authMethod: 'session', correlationId: 'c', occurredAt: '2030-01-01T00:00:00.000Z', schemaVersion: 1, workspaceId: 'ws' },
});
const created = (linkId: string, token: string, tokenCiphertext?: string): SearchLinkCreated => ({
  type: 'SearchLinkCreated',
  data: {
    linkId,
    workspaceId: 'ws',
    tokenHash: sha256Hex(token),
    tokenPrefix: token.slice(0, 8),
    ...(tokenCiphertext !== undefined ? { tokenCiphertext } : {}),
    name: linkId,
    allowedTags: [],
    expiresAt: null,
    historyMode: false,
    createdAt: '2030-01-01T00:00:00.000Z',
  },
});

describe('search link tokens in the read model and the management view', () => {
  let dir: string;
  let store: SqliteReadStore;
  let ctx: AppContext;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-linktok-'));
    store = new SqliteReadStore(path.join(dir, 'read.db'));
    ctx = { readStore: store, now: () => new Date('2030-01-02T00:00:00Z'), config: { dataDir: dir, baseUrl: BASE } } as unknown as AppContext;
  });
  afterAll(async () => store.close());

  it('a sealed token is opened again: token and publicUrl in every later view', async () => {
    const token = 'c'.repeat(64);
    await searchLinkProjection(store).apply([recorded(created('new', token, tokenVault(ctx).seal(token, 'new')))]);
    const link = await searchLinksCollection(store).get('new');
    expect(link?.tokenCiphertext).toMatch(/^v1:/);
    expect(await searchLinkView(ctx, link!)).toMatchObject({ id: 'new', token, tokenPrefix: 'cccccccc', publicUrl: `${BASE}/public/${token}/search` });
  });

  it('a link created before tokens were sealed (no tokenCiphertext) answers publicUrl null with its prefix', async () => {
    const token = 'd'.repeat(64);
    await searchLinkProjection(store).apply([recorded(created('legacy', token))]);
    const link = await searchLinksCollection(store).get('legacy');
    expect(link?.tokenCiphertext).toBeNull();
    const view = await searchLinkView(ctx, link!);
    expect(view).toMatchObject({ id: 'legacy', tokenPrefix: 'dddddddd', publicUrl: null });
    expect(view).not.toHaveProperty('token');
    // A row written by the projection before the field existed has no property at all.
    const { tokenCiphertext: _drop, ...old } = link!;
    expect(await searchLinkView(ctx, old)).toMatchObject({ publicUrl: null, tokenPrefix: 'dddddddd' });
  });

  it('a ciphertext that does not open to the hashed token (other key, other link) gives no token', async () => {
    const moved = 'e'.repeat(64);
    await searchLinkProjection(store).apply([recorded(created('moved', moved, tokenVault(ctx).seal(moved, 'other')))]);
    const wrong = '1'.repeat(64);
    await searchLinkProjection(store).apply([recorded(created('wrong', wrong, tokenVault(ctx).seal('f'.repeat(64), 'wrong')))]);
    for (const id of ['moved', 'wrong']) {
      const view = await searchLinkView(ctx, (await searchLinksCollection(store).get(id))!);
      expect(view.publicUrl).toBeNull();
      expect(view).not.toHaveProperty('token');
    }
  });

  it('the audit summary of SearchLinkCreated shows neither the hash, the prefix nor the ciphertext', () => {
    const token = 'a'.repeat(64);
    const e = created('audited', token, tokenVault(ctx).seal(token, 'audited'));
    const s = summarize(e.type, e.data);
    expect(s).toEqual({ linkId: 'audited', name: 'audited', allowedTags: [], expiresAt: null, historyMode: false });
    expect(JSON.stringify(s)).not.toContain('v1:');
  });
});
