import { AppContext } from '../app/context';
import { RecordedEvent } from '../domain/event';
import { Projection } from '../core/projection';
import { ReadStore } from '../ports/readStore';
import { documentStream } from '../domain/document/events';
import { workspaceStream } from '../domain/workspace/events';
import { workspaceProjection } from '../../projections/workspace/workspaceProjection';
import { instructionSetStream } from '../domain/instructionSet/events';
import { documentProjection, documentsCollection } from '../../projections/document/documentProjection';
import { instructionSetProjection, instructionSetsCollection } from '../../projections/instructionSet/instructionSetProjection';
import { documentDetail } from '../../queries/document/documentQueries';
import { setDetail } from '../../queries/instructionSet/instructionSetQueries';

/** Parse an `asOf` query value; null when it is not an ISO 8601 time. */
export function parseAsOf(value: unknown): Date | null {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(value)) return null;
  const t = Date.parse(value);
  return Number.isNaN(t) ? null : new Date(t);
}

const upTo = (events: RecordedEvent[], asOf: Date): RecordedEvent[] => {
  const limit = asOf.toISOString();
  return events.filter((e) => e.metadata.occurredAt <= limit);
};

/**
 * Fold events through the live read model's own projection, into a throw-away in-memory
 * store: the past state has exactly the shape and rules of the present one.
 */
async function foldInto<T>(scratch: () => ReadStore, events: RecordedEvent[], make: (s: ReadStore) => Projection, read: (s: ReadStore) => Promise<T>): Promise<T> {
  const store = scratch();
  try {
    await make(store).apply(events);
    return await read(store);
  } finally {
    await store.close();
  }
}

/**
 * A document's metadata as it was at `asOf` (the live GET's shape, its tags as they were
 * then), or null when it did not exist then (not yet uploaded, or already deleted).
 */
export async function documentAsOf(ctx: AppContext, docId: string, asOf: Date) {
  const events = upTo(await ctx.eventStore.readStream(documentStream(docId)), asOf);
  if (events.length === 0) return null;
  // The workspace's tags as they were then: names and colours of that time, deletions included.
  const workspaceId = (events[0].data as { workspaceId: string }).workspaceId;
  const tagEvents = upTo(await ctx.eventStore.readStream(workspaceStream(workspaceId)), asOf).filter((e) => e.type.startsWith('Tag'));
  const store = ctx.scratchReadStore();
  try {
    await documentProjection(store).apply([...events, ...tagEvents].sort((a, b) => a.position - b.position));
    await workspaceProjection(store).apply(tagEvents);
    const view = await documentsCollection(store).get(docId);
    return view ? await documentDetail({ ...ctx, readStore: store }, view) : null;
  } finally {
    await store.close();
  }
}

/**
 * An instruction set with its documents as it was at `asOf` (the live GET's shape), or
 * null when it did not exist then. Its documents' renames and deletions up to then count.
 */
export async function instructionSetAsOf(ctx: AppContext, setId: string, asOf: Date) {
  const own = upTo(await ctx.eventStore.readStream(instructionSetStream(setId)), asOf);
  if (own.length === 0) return null;
  const docIds = new Set(own.flatMap((e) => (e.type === 'SetDocumentAdded' ? [(e.data as { documentId: string }).documentId] : [])));
  const docEvents: RecordedEvent[] = [];
  for (const id of docIds) {
    const stream = await ctx.eventStore.readStream(documentStream(id));
    docEvents.push(...upTo(stream, asOf).filter((e) => e.type === 'DocumentMetadataUpdated' || e.type === 'DocumentDeleted'));
  }
  const events = [...own, ...docEvents].sort((a, b) => a.position - b.position);
  const view = await foldInto(ctx.scratchReadStore, events, instructionSetProjection, (s) => instructionSetsCollection(s).get(setId));
  return view ? { workspaceId: view.workspaceId, set: setDetail(ctx, view) } : null;
}
