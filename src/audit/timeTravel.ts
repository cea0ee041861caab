import { AppContext } from '../app/context';
import { parseIsoTime } from '../util/isoTime';
import { RecordedEvent } from '../domain/event';
import { documentEventTraits, documentStream } from '../domain/document/events';
import { workspaceStream } from '../domain/workspace/events';
import { workspaceProjection } from '../../projections/workspace/workspaceProjection';
import { instructionSetStream } from '../domain/instructionSet/events';
import { documentProjection, documentsCollection } from '../../projections/document/documentProjection';
import { instructionSetProjection, instructionSetsCollection } from '../../projections/instructionSet/instructionSetProjection';
import { documentDetail } from '../../queries/document/documentQueries';
import { setDetailNow } from '../../queries/instructionSet/instructionSetQueries';

/** Parse an `asOf` query value; null when it is not an ISO 8601 time. */
export function parseAsOf(value: unknown): Date | null {
  return parseIsoTime(value);
}

const upTo = (events: RecordedEvent[], asOf: Date): RecordedEvent[] => {
  const limit = asOf.toISOString();
  return events.filter((e) => e.metadata.occurredAt <= limit);
};

/** A workspace's tag events (not its members, invitations and settings). */
const TAG_EVENTS: ReadonlySet<string> = new Set(['TagCreated', 'TagUpdated', 'TagDeleted']);

/** A document's events that its metadata folds: all but its chunks and vectors (most of a large document's stream, which the documents projection passes over). */
const METADATA_EVENTS: ReadonlySet<string> = new Set(Object.keys(documentEventTraits).filter((t) => !['DocumentChunked', 'ChunksEmbedded', 'ChunksReembedded', 'DocumentReembedded'].includes(t)));

/**
 * A document's metadata as it was at `asOf` (the live GET's shape, its tags as they were
 * then), or null when it did not exist then (not yet uploaded, or already deleted).
 */
export async function documentAsOf(ctx: AppContext, docId: string, asOf: Date) {
  const events = upTo(await ctx.eventStore.readStream(documentStream(docId), 0, METADATA_EVENTS), asOf);
  if (events.length === 0) return null;
  // The workspace's tags as they were then: names and colours of that time, deletions included.
  const workspaceId = (events[0].data as { workspaceId: string }).workspaceId;
  const tagEvents = upTo(await ctx.eventStore.readStream(workspaceStream(workspaceId), 0, TAG_EVENTS), asOf).filter((e) => e.type.startsWith('Tag'));
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

/** The events of a document that decide its processing status (and failure) in the `documents` read model; none holds text. */
const STATUS_EVENTS: ReadonlySet<string> = new Set(['DocumentUploaded', 'DocumentProcessingStarted', 'DocumentVerified', 'DocumentProcessingFailed', 'DocumentDeleted']);

/** What a set's entries read of their documents: status, renames and deletions. */
const ENTRY_EVENTS: ReadonlySet<string> = new Set([...STATUS_EVENTS, 'DocumentMetadataUpdated']);

const byPosition = (a: RecordedEvent, b: RecordedEvent) => a.position - b.position;

/**
 * An instruction set with its documents as it was at `asOf` (the live GET's shape), or
 * null when it did not exist then. Its documents' renames and deletions up to then count,
 * and `unavailableDocuments` says which of its entries were not served then (their document
 * not VERIFIED at that time): the documents' status events up to then are folded through the
 * `documents` projection, and the present answer's own rule reads the result.
 */
export async function instructionSetAsOf(ctx: AppContext, setId: string, asOf: Date) {
  const own = upTo(await ctx.eventStore.readStream(instructionSetStream(setId)), asOf);
  if (own.length === 0) return null;
  const docIds = new Set(own.flatMap((e) => (e.type === 'SetDocumentAdded' ? [(e.data as { documentId: string }).documentId] : [])));
  const entryEvents: RecordedEvent[] = [];
  const statusEvents: RecordedEvent[] = [];
  for (const id of docIds) {
    const stream = upTo(await ctx.eventStore.readStream(documentStream(id), 0, ENTRY_EVENTS), asOf);
    entryEvents.push(...stream.filter((e) => e.type === 'DocumentMetadataUpdated' || e.type === 'DocumentDeleted'));
    statusEvents.push(...stream.filter((e) => STATUS_EVENTS.has(e.type)));
  }
  const store = ctx.scratchReadStore();
  try {
    await instructionSetProjection(store).apply([...own, ...entryEvents].sort(byPosition));
    await documentProjection(store).apply(statusEvents.sort(byPosition));
    const view = await instructionSetsCollection(store).get(setId);
    return view ? { workspaceId: view.workspaceId, set: await setDetailNow({ ...ctx, readStore: store }, view) } : null;
  } finally {
    await store.close();
  }
}
