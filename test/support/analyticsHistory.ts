import fc from 'fast-check';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AppContext } from '../../src/app/context';
import { SqliteEventStore } from '../../src/adapters/sqlite/sqliteEventStore';
import { SqliteReadStore } from '../../src/adapters/sqlite/sqliteReadStore';
import { EncryptingEventStore } from '../../src/adapters/encryption/encryptingEventStore';
import { schemaVersionOf } from '../../src/core/eventSchemas';
import { NewEvent } from '../../src/domain/event';
import { EventStore } from '../../src/ports/eventStore';
import { KeyStore } from '../../src/ports/keyStore';

/*
 * Random histories of a few workspaces as the analytics read them: documents uploaded,
 * processing runs started, verified or failed, text saved (sealed per document), chunks,
 * deletions and erasures (the document's key destroyed), searches of every channel,
 * public link uses, members and tags; with event times that now and then run backwards a
 * little (another process's clock), as they may in a real log.
 */

export const WORKSPACES = ['00000000-0000-4000-8000-0000000000a1', '00000000-0000-4000-8000-0000000000b2', '00000000-0000-4000-8000-0000000000c3'];
export const START = Date.parse('2026-01-05T08:00:00.000Z');
const HOUR = 3600_000;

export type Op =
  | { kind: 'upload'; ws: number }
  | { kind: 'run'; doc: number; reason: 'UPLOADED' | 'CONTENT_UPDATED' | 'REPROCESS_REQUESTED' | 'RESUMED' }
  | { kind: 'verify'; doc: number }
  | { kind: 'fail'; doc: number; code: 'NO_TEXT' | 'CORRUPT' | 'TIMEOUT' }
  | { kind: 'content'; doc: number }
  | { kind: 'chunks'; doc: number }
  | { kind: 'delete'; doc: number }
  | { kind: 'erase'; doc: number }
  | { kind: 'search'; ws: number; channel: 'workspace' | 'link' | 'tool'; latency: number; hits: number[] }
  | { kind: 'linkUse'; ws: number }
  | { kind: 'member'; ws: number }
  | { kind: 'tag'; ws: number };

/** One step: an operation, the time passed since the previous one, and a clock skew of its event. */
export interface Step {
  op: Op;
  advanceMinutes: number;
  skewSeconds: number;
}

const ws = fc.integer({ min: 0, max: WORKSPACES.length - 1 });
const doc = fc.nat(60);
export const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('upload' as const), ws }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('run' as const), doc, reason: fc.constantFrom('UPLOADED' as const, 'CONTENT_UPDATED' as const, 'REPROCESS_REQUESTED' as const, 'RESUMED' as const) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('verify' as const), doc }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('fail' as const), doc, code: fc.constantFrom('NO_TEXT' as const, 'CORRUPT' as const, 'TIMEOUT' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('content' as const), doc }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('chunks' as const), doc }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), doc }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('erase' as const), doc }) },
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('search' as const), ws, channel: fc.constantFrom('workspace' as const, 'link' as const, 'tool' as const), latency: fc.nat(900), hits: fc.array(doc, { maxLength: 4 }) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('linkUse' as const), ws }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('member' as const), ws }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('tag' as const), ws }) },
);
export const stepArb: fc.Arbitrary<Step> = fc.record({ op: opArb, advanceMinutes: fc.nat(300), skewSeconds: fc.integer({ min: -90, max: 30 }) });

const id = (kind: number, n: number) => `00000000-0000-4000-9${kind.toString(16).padStart(3, '0')}-${n.toString(16).padStart(12, '0')}`;

/** An in-memory key store (ids in a Map). */
export function memoryKeyStore(): KeyStore {
  const keys = new Map<string, Buffer | null>();
  return {
    get: async (d) => keys.get(d) ?? null,
    getOrCreate: async (d) => {
      if (!keys.has(d)) keys.set(d, Buffer.alloc(32, d.length + keys.size));
      return keys.get(d) ?? null;
    },
    destroy: async (d) => {
      keys.set(d, null);
    },
    isDestroyed: async (d) => keys.has(d) && keys.get(d) === null,
    close: async () => undefined,
  };
}

export interface Built {
  /** Time of the first and last events. */
  first: number;
  last: number;
}

/** Appends the history of `steps` to `store` (erasures destroy the document's key in `keys`). */
export async function appendHistory(store: EventStore, keys: KeyStore, steps: Step[]): Promise<Built> {
  let clock = START;
  let serial = 0;
  const docs: { id: string; ws: string; run: string | null; deleted: boolean }[] = [];
  const ev = (type: string, data: Record<string, unknown>, at: number): NewEvent => ({
    id: id(15, ++serial),
    type,
    data,
    metadata: { actorId: null, authMethod: 'system', correlationId: id(14, serial), occurredAt: new Date(at).toISOString(), schemaVersion: schemaVersionOf(type), workspaceId: data.workspaceId as string },
  });
  let first = Infinity;
  let last = -Infinity;
  for (const step of steps) {
    clock += step.advanceMinutes * 60_000;
    const at = clock + step.skewSeconds * 1000;
    first = Math.min(first, at);
    last = Math.max(last, at);
    const op = step.op;
    const d = 'doc' in op && docs.length ? docs[op.doc % docs.length] : undefined;
    const base = d ? { documentId: d.id, workspaceId: d.ws } : undefined;
    let stream: string | undefined;
    let event: NewEvent | undefined;
    switch (op.kind) {
      case 'upload': {
        const nd = { id: id(7, ++serial), ws: WORKSPACES[op.ws], run: null, deleted: false };
        docs.push(nd);
        stream = `document-${nd.id}`;
        const iso = new Date(at).toISOString();
        event = ev(
          'DocumentUploaded',
          { documentId: nd.id, workspaceId: nd.ws, blob: { sha256: 'a'.repeat(64), size: 3 }, kind: 'md', mimeType: 'text/markdown', size: 3, filename: 'a.md', title: 'A', purpose: 'KNOWLEDGE', tags: [], uploadedBy: 'u', uploadedAt: iso },
          at,
        );
        break;
      }
      case 'run':
        if (!d || d.deleted) break;
        d.run = id(8, ++serial);
        stream = `document-${d.id}`;
        event = ev('DocumentProcessingStarted', { ...base, processingId: d.run, reason: op.reason, startedAt: new Date(at).toISOString() }, at);
        break;
      case 'verify':
      case 'fail':
        if (!d || !d.run) break;
        stream = `document-${d.id}`;
        event =
          op.kind === 'verify'
            ? ev('DocumentVerified', { ...base, processingId: d.run, chunkCount: 1, tokenCount: 3 }, at)
            : ev('DocumentProcessingFailed', { ...base, processingId: d.run, code: op.code, message: 'no' }, at);
        break;
      case 'content':
        if (!d || d.deleted) break;
        stream = `document-${d.id}`;
        event = ev('DocumentContentUpdated', { ...base, content: `secret text ${serial}`, size: 12, updatedAt: new Date(at).toISOString() }, at);
        break;
      case 'chunks':
        if (!d || !d.run) break;
        stream = `document-${d.id}`;
        event = ev('DocumentChunked', { ...base, processingId: d.run, chunks: [{ index: 0, content: `chunk ${serial}`, tokenCount: 2 }] }, at);
        break;
      case 'delete':
        if (!d || d.deleted) break;
        d.deleted = true;
        stream = `document-${d.id}`;
        event = ev('DocumentDeleted', { ...base, deletedAt: new Date(at).toISOString(), blobSha256: 'a'.repeat(64) }, at);
        break;
      case 'erase':
        if (d?.deleted) await keys.destroy(d.id);
        break;
      case 'search': {
        const searchId = id(11, ++serial);
        const w = WORKSPACES[op.ws];
        const hits = [...new Set(op.hits.map((h) => docs[h % Math.max(1, docs.length)]?.id).filter((x): x is string => !!x))];
        stream = `search-${searchId}`;
        const linkId = op.channel === 'workspace' ? null : id(9, op.ws + 1);
        event = ev('SearchPerformed', { searchId, workspaceId: w, channel: op.channel, linkId, latencyMs: op.latency / 10, resultCount: hits.length, hitDocumentIds: hits }, at);
        break;
      }
      case 'linkUse': {
        const useId = id(12, ++serial);
        stream = `link-use-${useId}`;
        event = ev('PublicLinkUsed', { useId, workspaceId: WORKSPACES[op.ws], linkId: id(9, op.ws + 1), channel: 'http', outcome: 'ok', latencyMs: 4 }, at);
        break;
      }
      case 'member':
        stream = `workspace-${WORKSPACES[op.ws]}`;
        event = ev('MemberAdded', { workspaceId: WORKSPACES[op.ws], userId: id(1, serial), role: 'MEMBER', joinedAt: new Date(at).toISOString() }, at);
        break;
      case 'tag':
        stream = `workspace-${WORKSPACES[op.ws]}`;
        event = ev('TagCreated', { workspaceId: WORKSPACES[op.ws], tagId: id(5, ++serial), name: `t${serial}`, color: '#112233' }, at);
        break;
    }
    if (stream && event) await store.append(stream, [event], 'any');
  }
  return { first, last };
}

/** An event store on a temporary file (sealing document text per document), and its key store and read stores. */
export function tempStores() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-asof-'));
  const keys = memoryKeyStore();
  const inner = new SqliteEventStore(path.join(dir, 'events.db'), { synchronous: 'normal' });
  const events = new EncryptingEventStore(inner, keys);
  const live = new SqliteReadStore(':memory:');
  return {
    keys,
    events,
    live,
    close: async () => {
      await events.close();
      await live.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The parts of an AppContext the analytics answers use. */
export function analyticsContext(eventStore: EventStore, readStore: SqliteReadStore, maxRows = 200_000): AppContext {
  return {
    eventStore,
    readStore,
    scratchReadStore: () => new SqliteReadStore(':memory:'),
    config: { analyticsMaxRows: maxRows, readYourWritesMs: 1000 },
    runner: { waitFor: async () => true },
    metrics: { rateLimited: () => undefined },
    now: () => new Date(),
  } as unknown as AppContext;
}

export const HOURS = HOUR;
