import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { ProjectionRunner, rebuildProjections } from '../../src/core/projectionRunner';
import { Projection } from '../../src/core/projection';
import { NewEvent } from '../../src/domain/event';
import { ReadStore } from '../../src/ports/readStore';
import { userProjection } from '../../projections/user/userProjection';
import { workspaceProjection } from '../../projections/workspace/workspaceProjection';
import { documentProjection } from '../../projections/document/documentProjection';
import { searchLinkProjection } from '../../projections/searchLink/searchLinkProjection';
import { auditProjection } from '../../projections/audit/auditProjection';
import { analyticsProjection } from '../../projections/analytics/analyticsProjection';
import { instructionSetProjection } from '../../projections/instructionSet/instructionSetProjection';

/** Every read-model projection of the service (the search index has its own tests). */
const readModels = (store: ReadStore): Projection[] => [
  userProjection(store),
  workspaceProjection(store),
  documentProjection(store),
  instructionSetProjection(store),
  searchLinkProjection(store),
  auditProjection(store),
  analyticsProjection(store),
];

/** Deterministic pseudo-random numbers (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const uuid = (kind: number, n: number): string => `00000000-0000-4000-8${kind.toString(16).padStart(3, '0')}-${n.toString(16).padStart(12, '0')}`;

/**
 * A log of many event types acting on a few entities again and again (updates, deletes,
 * re-creations, deletes by filter), as appends of 1–4 events to their streams.
 */
function generateLog(seed: number, appends: number): { stream: string; events: NewEvent[] }[] {
  const rnd = random(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)];
  let clock = Date.parse('2024-03-01T10:00:00.000Z');
  let serial = 0;
  const next = (kind: number) => uuid(kind, ++serial);
  const users = Array.from({ length: 6 }, (_, i) => uuid(1, i + 1));
  const workspaces = Array.from({ length: 4 }, (_, i) => uuid(2, i + 1));
  const tags = new Map(workspaces.map((w) => [w, [] as string[]]));
  const docs = new Map(workspaces.map((w) => [w, [] as { id: string; run: string }[]]));
  const links = new Map(workspaces.map((w) => [w, [] as string[]]));
  const invitations = new Map(workspaces.map((w) => [w, [] as string[]]));
  const sessions: { id: string; userId: string }[] = [];
  const keys: { id: string; userId: string }[] = [];
  const out: { stream: string; events: NewEvent[] }[] = [];
  const ev = (type: string, data: Record<string, unknown>, actor: string): NewEvent => {
    clock += Math.floor(rnd() * 20_000);
    const workspaceId = typeof data.workspaceId === 'string' ? data.workspaceId : undefined;
    return {
      id: next(15),
      type,
      data,
      metadata: { actorId: actor, authMethod: 'session', correlationId: next(14), occurredAt: new Date(clock).toISOString(), schemaVersion: 1, ...(workspaceId ? { workspaceId } : {}) },
    };
  };
  const at = () => new Date(clock).toISOString();
  for (const u of users) {
    out.push({ stream: `user-${u}`, events: [ev('UserRegistered', { userId: u, email: `${u}@example.com`, name: `User ${u.slice(-2)}`, passwordHash: 'h', registeredAt: at(), emailVerified: false }, u)] });
  }
  for (const w of workspaces) {
    const settings = { allowPublicSearchLinks: true, defaultDocumentPurpose: 'KNOWLEDGE' };
    out.push({ stream: `workspace-${w}`, events: [ev('WorkspaceCreated', { workspaceId: w, name: `W ${w.slice(-1)}`, ownerId: users[0], createdAt: at(), settings }, users[0])] });
  }
  for (let i = 0; i < appends; i++) {
    const w = pick(workspaces);
    const u = pick(users);
    const r = rnd();
    const events: NewEvent[] = [];
    let stream = `workspace-${w}`;
    if (r < 0.06) {
      stream = `user-${u}`;
      events.push(ev(pick(['EmailVerified', 'PasswordReset', 'MfaEnabled', 'MfaDisabled']), { userId: u, passwordHash: `h${i}`, verifiedAt: at() }, u));
    } else if (r < 0.14) {
      const s = { id: next(3), userId: u };
      sessions.push(s);
      stream = `session-${s.id}`;
      events.push(ev('SessionStarted', { sessionId: s.id, userId: u, expiresAt: at(), startedAt: at(), device: 'jest' }, u));
    } else if (r < 0.22 && sessions.length) {
      const s = pick(sessions);
      stream = `session-${s.id}`;
      events.push(ev(rnd() < 0.8 ? 'RefreshTokenRotated' : 'SessionRevoked', { sessionId: s.id, userId: s.userId, expiresAt: at() }, s.userId));
    } else if (r < 0.26) {
      const k = { id: next(4), userId: u };
      keys.push(k);
      stream = `apikey-${k.id}`;
      events.push(ev('ApiKeyCreated', { keyId: k.id, userId: u, name: 'key', prefix: k.id.slice(-6), keyHash: `kh-${k.id}`, createdAt: at() }, u));
      if (rnd() < 0.3) events.push(ev('ApiKeyRevoked', { keyId: k.id, userId: u }, u));
    } else if (r < 0.34) {
      const t = rnd() < 0.5 || tags.get(w)!.length === 0 ? next(5) : pick(tags.get(w)!);
      if (!tags.get(w)!.includes(t)) {
        tags.get(w)!.push(t);
        events.push(ev('TagCreated', { workspaceId: w, tagId: t, name: `t${i}`, color: '#112233' }, u));
      } else events.push(ev(rnd() < 0.7 ? 'TagUpdated' : 'TagDeleted', { workspaceId: w, tagId: t, name: `t${i}`, color: '#445566' }, u));
    } else if (r < 0.42) {
      const m = pick(users);
      events.push(ev(pick(['MemberAdded', 'MemberRoleChanged', 'MemberRemoved']), { workspaceId: w, userId: m, role: pick(['ADMIN', 'MEMBER', 'VIEWER']), joinedAt: at() }, u));
    } else if (r < 0.46) {
      const inv = rnd() < 0.5 || invitations.get(w)!.length === 0 ? next(6) : pick(invitations.get(w)!);
      if (!invitations.get(w)!.includes(inv)) {
        invitations.get(w)!.push(inv);
        events.push(ev('InvitationCreated', { workspaceId: w, invitationId: inv, email: `${inv}@example.com`, role: 'MEMBER', expiresAt: at(), createdAt: at() }, u));
      } else events.push(ev(rnd() < 0.5 ? 'InvitationAccepted' : 'InvitationRevoked', { workspaceId: w, invitationId: inv, userId: u }, u));
    } else if (r < 0.48) {
      events.push(ev('WorkspaceUpdated', { workspaceId: w, name: `W renamed ${i}`, updatedAt: at() }, u));
    } else if (r < 0.49) {
      events.push(ev('OwnershipTransferred', { workspaceId: w, fromUserId: users[0], toUserId: u }, users[0]));
    } else if (r < 0.62) {
      const d = { id: next(7), run: next(8) };
      docs.get(w)!.push(d);
      stream = `document-${d.id}`;
      const docTags = tags.get(w)!.filter(() => rnd() < 0.3);
      events.push(
        ev('DocumentUploaded', { documentId: d.id, workspaceId: w, blob: { sha256: 'a'.repeat(64), size: 3 }, kind: 'md', mimeType: 'text/markdown', size: 3, filename: 'a.md', title: `Doc ${i}`, purpose: 'KNOWLEDGE', tags: docTags, uploadedBy: u, uploadedAt: at() }, u),
        ev('DocumentProcessingStarted', { documentId: d.id, workspaceId: w, processingId: d.run, reason: 'UPLOAD' }, 'system'),
      );
      if (rnd() < 0.7) events.push(ev('DocumentVerified', { documentId: d.id, workspaceId: w, processingId: d.run }, 'system'));
      else if (rnd() < 0.5) events.push(ev('DocumentProcessingFailed', { documentId: d.id, workspaceId: w, processingId: d.run, code: 'EXTRACTION_FAILED', message: 'no text' }, 'system'));
    } else if (r < 0.72 && docs.get(w)!.length) {
      const d = pick(docs.get(w)!);
      stream = `document-${d.id}`;
      const kind = rnd();
      if (kind < 0.5) events.push(ev('DocumentMetadataUpdated', { documentId: d.id, workspaceId: w, title: `Retitled ${i}`, tags: tags.get(w)!.filter(() => rnd() < 0.3), updatedAt: at() }, u));
      else if (kind < 0.8) {
        d.run = next(8);
        events.push(ev('DocumentProcessingStarted', { documentId: d.id, workspaceId: w, processingId: d.run, reason: 'REPROCESS' }, u));
        events.push(ev('DocumentVerified', { documentId: d.id, workspaceId: w, processingId: d.run }, 'system'));
      } else events.push(ev('DocumentDeleted', { documentId: d.id, workspaceId: w, deletedAt: at() }, u));
    } else if (r < 0.8) {
      const l = rnd() < 0.4 || links.get(w)!.length === 0 ? next(9) : pick(links.get(w)!);
      stream = `link-${l}`;
      if (!links.get(w)!.includes(l)) {
        links.get(w)!.push(l);
        events.push(ev('SearchLinkCreated', { linkId: l, workspaceId: w, tokenHash: `th-${l}`, tokenPrefix: l.slice(-6), name: `link ${i}`, allowedTags: [], expiresAt: null, historyMode: rnd() < 0.5, createdAt: at() }, u));
      } else if (rnd() < 0.5) events.push(ev('SearchLinkUpdated', { linkId: l, workspaceId: w, name: `link ${i}`, historyMode: rnd() < 0.5, updatedAt: at() }, u));
      else events.push(ev('LinkRevoked', { linkId: l, workspaceId: w, revokedAt: at() }, u));
    } else if (r < 0.97) {
      const l = links.get(w)!.length ? pick(links.get(w)!) : null;
      stream = `search-${next(10)}`;
      // Several uses of one link within a minute update the same usage row.
      for (let k = 0, n = 1 + Math.floor(rnd() * 3); k < n; k++) {
        if (l && rnd() < 0.6) events.push(ev('PublicLinkUsed', { linkId: l, workspaceId: w, channel: pick(['http', 'mcp']), outcome: rnd() < 0.9 ? 'ok' : 'error', latencyMs: Math.floor(rnd() * 90) }, 'link'));
        else events.push(ev('SearchPerformed', { searchId: next(11), workspaceId: w, channel: 'api', linkId: null, latencyMs: 5, resultCount: 2, hitDocumentIds: docs.get(w)!.slice(0, 2).map((d) => d.id) }, u));
      }
    } else {
      // A workspace deleted, then created again under the same id: deletes by filter, rows back.
      events.push(ev('WorkspaceDeleted', { workspaceId: w, deletedAt: at() }, users[0]));
      events.push(ev('WorkspaceCreated', { workspaceId: w, name: `W again ${i}`, ownerId: users[0], createdAt: at(), settings: { allowPublicSearchLinks: false, defaultDocumentPurpose: 'KNOWLEDGE' } }, users[0]));
      tags.set(w, []);
    }
    if (events.length) out.push({ stream, events });
  }
  return out;
}

/** Every read-model row and checkpoint of a store, and the indexes it has. */
function snapshot(store: SqliteReadStore): { tables: Map<string, [string, string][]>; checkpoints: unknown[]; indexes: string[] } {
  const db = store.database;
  const names = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rm_%' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
  // Every column: the document and its indexed fields' own columns.
  const tables = new Map(names.map((n) => [n, (db.prepare(`SELECT * FROM ${n} ORDER BY id`).raw().all() as [string, string][])]));
  // The projections' positions (not the bookkeeping of a reset: `name#version`, `name#clearing`).
  const checkpoints = db.prepare("SELECT projection, position FROM checkpoints WHERE projection NOT LIKE '%#%' ORDER BY projection").all();
  const indexes = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name").all() as { name: string }[]).map((r) => r.name);
  return { tables, checkpoints, indexes };
}

describe('rebuild: the read models a rebuild gives are the ones projected live', () => {
  let dir: string;
  let events: SqliteEventStore;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-rebuild-eq-'));
    events = new SqliteEventStore(path.join(dir, 'events.db'), { synchronous: 'normal' });
  });
  afterEach(async () => {
    await events.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('across many event types, in small spans and in the default ones, into the live store and into a new one', async () => {
    const live = new SqliteReadStore(path.join(dir, 'live.db'));
    const runner = new ProjectionRunner(events, readModels(live), undefined, { batchTransaction: (fn) => live.transaction(fn) });
    await runner.start();
    const log = generateLog(13, 1500);
    for (const [i, a] of log.entries()) {
      const r = await events.append(a.stream, a.events, 'any');
      // Live batches of every size: waiting now and then, otherwise letting appends pile up.
      if (i % 7 === 0) expect(await runner.waitFor(r.position, 10_000)).toBe(true);
    }
    const head = await events.headPosition();
    expect(await runner.waitFor(head, 10_000)).toBe(true);
    await runner.stop();
    const expected = snapshot(live);
    const rows = [...expected.tables.values()].reduce((n, t) => n + t.length, 0);
    // The log touched every read model, with rows left in each of the busy ones.
    for (const t of ['rm_users', 'rm_sessions', 'rm_api_keys', 'rm_account_events', 'rm_workspaces', 'rm_members', 'rm_invitations', 'rm_tags', 'rm_documents', 'rm_search_links', 'rm_audit_entries', 'rm_analytics_documents', 'rm_analytics_runs', 'rm_analytics_searches', 'rm_analytics_link_usage']) {
      expect([t, expected.tables.get(t)?.length ?? 0]).not.toEqual([t, 0]);
    }
    expect(rows).toBeGreaterThan(2000);

    // The same store rebuilt in place (what `kb rebuild` does), in spans of a few batches.
    const inPlace = await rebuildProjections(events, readModels(live), undefined, {
      batchSize: 7,
      eventsPerTransaction: 60,
      transaction: (fn) => live.transaction(fn),
      bulkLoad: (fn) => live.bulkLoad(fn),
    });
    expect(inPlace.events).toBe(head);
    const rebuiltInPlace = snapshot(live);
    expect(rebuiltInPlace.indexes).toEqual(expected.indexes);
    expect(rebuiltInPlace.checkpoints).toEqual(expected.checkpoints);
    for (const [name, want] of expected.tables) expect([name, rebuiltInPlace.tables.get(name)]).toEqual([name, want]);
    await live.close();

    // New stores: default spans, with buffered rows written out every few kilobytes, spans
    // committed on the writer thread (the default) and on the store's own connection; and
    // spans of a few batches on the writer thread.
    const variants: { file: string; bulkWriter: 'thread' | 'inline'; bulkBufferChars?: number; eventsPerTransaction?: number }[] = [
      { file: 'fresh-thread.db', bulkWriter: 'thread', bulkBufferChars: 4096 },
      { file: 'fresh-inline.db', bulkWriter: 'inline', bulkBufferChars: 4096 },
      { file: 'fresh-small-spans.db', bulkWriter: 'thread', eventsPerTransaction: 100 },
    ];
    for (const v of variants) {
      const fresh = new SqliteReadStore(path.join(dir, v.file), { bulkWriter: v.bulkWriter, bulkBufferChars: v.bulkBufferChars });
      try {
        await rebuildProjections(events, readModels(fresh), undefined, {
          transaction: (fn) => fresh.transaction(fn),
          bulkLoad: (fn) => fresh.bulkLoad(fn),
          eventsPerTransaction: v.eventsPerTransaction,
        });
        const rebuilt = snapshot(fresh);
        expect([v.file, rebuilt.indexes]).toEqual([v.file, expected.indexes]);
        expect([v.file, rebuilt.checkpoints]).toEqual([v.file, expected.checkpoints]);
        for (const [name, want] of expected.tables) expect([v.file, name, rebuilt.tables.get(name)]).toEqual([v.file, name, want]);
        expect([...rebuilt.tables.keys()]).toEqual([...expected.tables.keys()]);
      } finally {
        await fresh.close();
      }
    }
  });
});
