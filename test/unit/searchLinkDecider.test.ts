import { searchLinkDecider, SearchLinkCommand } from '../../src/domain/searchLink/decider';
import { SearchLinkEvent } from '../../src/domain/searchLink/events';
import { specFor } from '../support/given';

const spec = specFor(searchLinkDecider);
const now = new Date('2030-01-01T00:00:00.000Z');
const WS = 'ws-1';
const HASH = 'a'.repeat(64);
const SEALED = 'v1:c2VhbGVkLXRva2VuLWJ5dGVz';

const create = (over: Partial<Extract<SearchLinkCommand, { type: 'CreateSearchLink' }>> = {}): SearchLinkCommand => ({
  type: 'CreateSearchLink',
  linkId: 'link-1',
  workspaceId: WS,
  tokenHash: HASH,
  tokenPrefix: 'aaaaaaaa',
  tokenCiphertext: SEALED,
  name: 'Docs',
  allowedTags: ['t1'],
  expiresAt: null,
  historyMode: false,
  linksEnabled: true,
  workspaceTags: ['t1', 't2'],
  now,
  ...over,
});

const created: SearchLinkEvent = {
  type: 'SearchLinkCreated',
  data: { linkId: 'link-1', workspaceId: WS, tokenHash: HASH, tokenPrefix: 'aaaaaaaa', tokenCiphertext: SEALED, name: 'Docs', allowedTags: ['t1'], expiresAt: null, historyMode: false, createdAt: now.toISOString() },
};
const revoked: SearchLinkEvent = { type: 'LinkRevoked', data: { linkId: 'link-1', workspaceId: WS, revokedAt: now.toISOString() } };
const update = (over: Partial<Extract<SearchLinkCommand, { type: 'UpdateSearchLink' }>>): SearchLinkCommand => ({
  type: 'UpdateSearchLink',
  workspaceId: WS,
  linksEnabled: true,
  workspaceTags: ['t1', 't2'],
  now,
  ...over,
});

describe('search link decider', () => {
  describe('create', () => {
    it('creates a link holding the token hash and the sealed token, never the token', () => spec([]).when(create()).then([created]));
    it('refuses a tokenCiphertext that is not a sealed token (programming error)', () => {
      expect(() => spec([]).when(create({ tokenCiphertext: 'b'.repeat(64) })).result()).toThrow(/tokenCiphertext/);
      expect(() => spec([]).when(create({ tokenCiphertext: '' })).result()).toThrow(/tokenCiphertext/);
    });
    it('evolves from a link created before tokens were sealed (no tokenCiphertext)', () => {
      const { tokenCiphertext: _drop, ...legacyData } = (created as Extract<SearchLinkEvent, { type: 'SearchLinkCreated' }>).data;
      spec([{ type: 'SearchLinkCreated', data: legacyData }]).when(update({ name: 'Renamed' })).then([
        { type: 'SearchLinkUpdated', data: { linkId: 'link-1', workspaceId: WS, name: 'Renamed', updatedAt: now.toISOString() } },
      ]);
    });
    it('normalises expiresAt to ISO UTC and de-duplicates tags', () =>
      spec([])
        .when(create({ expiresAt: '2030-01-02T01:00:00+01:00', allowedTags: ['t1', 't1', 't2'] }))
        .then([{ ...created, data: { ...created.data, expiresAt: '2030-01-02T00:00:00.000Z', allowedTags: ['t1', 't2'] } } as SearchLinkEvent]));
    it('refuses while public links are disabled', () => spec([]).when(create({ linksEnabled: false })).thenThrows('PUBLIC_LINKS_DISABLED'));
    it('refuses tags that are not the workspace tags', () => spec([]).when(create({ allowedTags: ['t1', 'nope'] })).thenThrows('VALIDATION_ERROR'));
    it('refuses an expiry in the past or now', () => {
      spec([]).when(create({ expiresAt: '2029-12-31T23:59:59Z' })).thenThrows('VALIDATION_ERROR');
      spec([]).when(create({ expiresAt: now.toISOString() })).thenThrows('VALIDATION_ERROR');
    });
    it('refuses a second creation of the same link', () => spec([created]).when(create()).thenThrows('CONFLICT'));
    it('keeps historyMode as asked', () => {
      const [e] = spec([]).when(create({ historyMode: true })).result();
      expect(e.type === 'SearchLinkCreated' && e.data.historyMode).toBe(true);
    });
  });

  describe('update', () => {
    it('records only what changed', () =>
      spec([created])
        .when(update({ name: 'Docs', allowedTags: ['t2'], historyMode: true }))
        .then([{ type: 'SearchLinkUpdated', data: { linkId: 'link-1', workspaceId: WS, allowedTags: ['t2'], historyMode: true, updatedAt: now.toISOString() } }]));
    it('emits nothing when nothing changes', () => spec([created]).when(update({ name: 'Docs', allowedTags: ['t1'] })).then([]));
    it('can clear the expiry', () => {
      const withExpiry = { ...created, data: { ...created.data, expiresAt: '2030-02-01T00:00:00.000Z' } } as SearchLinkEvent;
      spec([withExpiry])
        .when(update({ expiresAt: null }))
        .then([{ type: 'SearchLinkUpdated', data: { linkId: 'link-1', workspaceId: WS, expiresAt: null, updatedAt: now.toISOString() } }]);
    });
    it('refuses on a revoked link', () => spec([created, revoked]).when(update({ name: 'x' })).thenThrows('NOT_FOUND'));
    it('refuses on another workspace', () => spec([created]).when(update({ workspaceId: 'other', name: 'x' })).thenThrows('NOT_FOUND'));
    it('refuses unknown tags and past expiry', () => {
      spec([created]).when(update({ allowedTags: ['zzz'] })).thenThrows('VALIDATION_ERROR');
      spec([created]).when(update({ expiresAt: '2000-01-01T00:00:00Z' })).thenThrows('VALIDATION_ERROR');
    });
    it('refuses while links are disabled', () => spec([created]).when(update({ name: 'x', linksEnabled: false })).thenThrows('PUBLIC_LINKS_DISABLED'));
  });

  describe('revoke', () => {
    it('revokes an active link', () => spec([created]).when({ type: 'RevokeSearchLink', workspaceId: WS, now }).then([revoked]));
    it('is permanent: a second revoke is not found', () => spec([created, revoked]).when({ type: 'RevokeSearchLink', workspaceId: WS, now }).thenThrows('NOT_FOUND'));
    it('cannot revoke a link that never existed', () => spec([]).when({ type: 'RevokeSearchLink', workspaceId: WS, now }).thenThrows('NOT_FOUND'));
  });
});
