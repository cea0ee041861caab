import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { Collection, ReadDoc, ReadStore } from '../../src/ports/readStore';
import { AuthReadCache } from '../../queries/user/authReadCache';
import { apiKeysCollection, sessionsCollection, usersCollection } from '../../projections/user/userProjection';
import { membersCollection, memberId, workspacesCollection } from '../../projections/workspace/workspaceProjection';
import { sha256Hex } from '../../src/util/crypto';

/** The SQLite read store, counting reads by id and able to hold them (a read in flight). */
function instrumented(inner: ReadStore) {
  const reads: string[] = [];
  let held: { release: () => void; started: Promise<void> } | null = null;
  let markStarted: (() => void) | null = null;
  const store: ReadStore = Object.create(inner) as ReadStore;
  store.collection = <T extends ReadDoc>(name: string, indexes?: Parameters<ReadStore['collection']>[1]): Collection<T> => {
    const c = inner.collection<T>(name, indexes);
    return {
      ...c,
      get: async (id: string) => {
        reads.push(`${name}:${id}`);
        const value = await c.get(id);
        if (held) {
          markStarted?.();
          const h = held;
          held = null;
          await new Promise<void>((r) => (h.release = r));
        }
        return value;
      },
      find: async (filter, options) => {
        reads.push(`${name}:find`);
        return c.find(filter, options);
      },
      getMany: (ids) => c.getMany(ids),
      put: (doc) => c.put(doc),
      delete: (id) => c.delete(id),
      deleteMany: (f) => c.deleteMany(f),
      count: (f) => c.count(f),
    };
  };
  return {
    store,
    reads,
    /** The next read by id completes only when `release` is called (its value is the one read before). */
    holdNext(): { release: () => void; started: Promise<void> } {
      const h = { release: () => undefined, started: new Promise<void>((r) => (markStarted = r)) };
      held = h;
      return { release: () => h.release(), started: h.started };
    },
  };
}

describe('AuthReadCache: the reads of authentication, remembered until an event may change them', () => {
  let dir: string;
  let inner: SqliteReadStore;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-auth-cache-'));
    inner = new SqliteReadStore(path.join(dir, 'read.db'));
  });
  afterEach(async () => {
    await inner.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const seed = async () => {
    await usersCollection(inner).put({ id: 'u1', email: 'a@example.com', name: 'A', passwordHash: 'x', createdAt: '2026-01-01T00:00:00.000Z', emailVerified: false, mfa: 'off' });
    await sessionsCollection(inner).put({ id: 's1', userId: 'u1', revoked: false, expiresAt: '2099-01-01T00:00:00.000Z' });
    await apiKeysCollection(inner).put({ id: 'k1', userId: 'u1', name: 'ci', prefix: 'kb_abcdef', keyHash: sha256Hex('kb_secret'), createdAt: '2026-01-01T00:00:00.000Z', revoked: false });
    await membersCollection(inner).put({ id: memberId('w1', 'u1'), workspaceId: 'w1', userId: 'u1', role: 'ADMIN', joinedAt: '2026-01-01T00:00:00.000Z' });
    await workspacesCollection(inner).put({ id: 'w1', name: 'W', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', settings: { allowPublicSearchLinks: true, defaultDocumentPurpose: 'KNOWLEDGE' } });
  };

  it('reads each row once while only irrelevant events (tags, documents, searches) are applied', async () => {
    await seed();
    const { store, reads } = instrumented(inner);
    const cache = new AuthReadCache(store);
    for (let i = 0; i < 3; i++) {
      expect(await cache.liveSession('s1')).toEqual({ id: 's1', userId: 'u1' });
      expect(await cache.user('u1')).toMatchObject({ id: 'u1', email: 'a@example.com' });
      expect(await cache.memberRole('w1', 'u1')).toBe('ADMIN');
      expect(await cache.unmetIdentityRequirement('w1', 'u1', 'session')).toBeNull();
      expect(await cache.liveApiKey('kb_secret')).toEqual({ id: 'k1', userId: 'u1' });
      cache.applied([{ type: 'TagUpdated' }, { type: 'DocumentUploaded' }, { type: 'SearchPerformed' }]);
    }
    expect(reads.sort()).toEqual(['api_keys:find', 'members:w1:u1', 'sessions:s1', 'users:u1', 'workspaces:w1']);
  });

  it.each([
    ['SessionRevoked', async () => sessionsCollection(inner).put({ id: 's1', userId: 'u1', revoked: true, expiresAt: '2099-01-01T00:00:00.000Z' })],
    ['MemberRemoved', async () => membersCollection(inner).delete(memberId('w1', 'u1'))],
    ['WorkspaceUpdated', async () => undefined],
    ['UserRegistered', async () => undefined],
    ['ApiKeyRevoked', async () => undefined],
    ['SomeEventTypeAddedLater', async () => undefined],
  ])('a batch with %s makes it read again (a revocation or removal is seen at once)', async (type, change) => {
    await seed();
    const { store, reads } = instrumented(inner);
    const cache = new AuthReadCache(store);
    await cache.liveSession('s1');
    await cache.memberRole('w1', 'u1');
    await change();
    cache.applied([{ type: 'TagUpdated' }, { type }]);
    const session = await cache.liveSession('s1');
    const role = await cache.memberRole('w1', 'u1');
    expect(reads.filter((r) => r === 'sessions:s1')).toHaveLength(2);
    if (type === 'SessionRevoked') expect(session).toBeNull();
    if (type === 'MemberRemoved') expect(role).toBeNull();
  });

  it('a batch whose events are unknown (a catch-up span) makes it read again', async () => {
    await seed();
    const { store, reads } = instrumented(inner);
    const cache = new AuthReadCache(store);
    await cache.user('u1');
    cache.applied(undefined);
    await cache.user('u1');
    expect(reads).toEqual(['users:u1', 'users:u1']);
  });

  it('a workspace setting applied by an event is enforced at once', async () => {
    await seed();
    const { store } = instrumented(inner);
    const cache = new AuthReadCache(store);
    expect(await cache.unmetIdentityRequirement('w1', 'u1', 'session')).toBeNull();
    const w = await workspacesCollection(inner).get('w1');
    await workspacesCollection(inner).put({ ...w!, settings: { ...w!.settings, requireVerifiedEmail: true } });
    cache.applied([{ type: 'WorkspaceUpdated' }]);
    expect(await cache.unmetIdentityRequirement('w1', 'u1', 'session')).toBe('verified_email');
    expect(await cache.unmetIdentityRequirement('w1', 'u1', 'api_key')).toBe('verified_email');
  });

  it('a read under way while a batch is applied is answered but not remembered (it may predate the change)', async () => {
    await seed();
    const { store, reads, holdNext } = instrumented(inner);
    const cache = new AuthReadCache(store);
    const hold = holdNext();
    const inFlight = cache.liveSession('s1');
    await hold.started;
    // The session is revoked and the batch applied while the read that saw it live is still under way.
    await sessionsCollection(inner).put({ id: 's1', userId: 'u1', revoked: true, expiresAt: '2099-01-01T00:00:00.000Z' });
    cache.applied([{ type: 'SessionRevoked' }]);
    hold.release();
    expect(await inFlight).toEqual({ id: 's1', userId: 'u1' });
    expect(await cache.liveSession('s1')).toBeNull();
    expect(reads).toEqual(['sessions:s1', 'sessions:s1']);
  });

  it('does not remember what it did not find', async () => {
    const { store, reads } = instrumented(inner);
    const cache = new AuthReadCache(store);
    expect(await cache.liveSession('nope')).toBeNull();
    expect(await cache.liveSession('nope')).toBeNull();
    expect(reads).toEqual(['sessions:nope', 'sessions:nope']);
  });
});
