import { AppContext } from '../../src/app/context';
import { DomainError } from '../../src/domain/errors';
import { RecordedEvent } from '../../src/domain/event';
import { ReadStore } from '../../src/ports/readStore';
import { SearchChannel } from '../../src/domain/search/events';
import {
  ANALYTICS_DOCUMENT_EVENTS,
  ANALYTICS_PROJECTION,
  ANALYTICS_VERSION,
  analyticsDocumentsCollection,
  analyticsProjection,
  analyticsRunsCollection,
  analyticsSearchesCollection,
  AnalyticsSearchView,
} from '../../projections/analytics/analyticsProjection';
import { searchLinksCollection } from '../../projections/searchLink/searchLinkProjection';
import { storedQueryCounts } from '../searchLink/linkUsage';
import { clearingKey, versionKey } from '../../src/core/projection';
import { documentStream } from '../../src/domain/document/events';
import { FairTurns } from '../../src/util/fairTurns';

export type Interval = 'hour' | 'day' | 'week';
export const MAX_BUCKETS = 1000;
const TOP = 10;

export interface AnalyticsRequest {
  workspaceId: string;
  from: Date;
  to: Date;
  interval: Interval;
  asOf: Date | null;
}

/** Nearest-rank percentile of sorted numbers; null when there are none. */
export function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

const spread = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  return { count: s.length, p50: percentile(s, 50), p95: percentile(s, 95), max: s.length ? s[s.length - 1] : null };
};

/** Start of the bucket holding `t` (weeks start on Monday, UTC). */
export function bucketStart(t: Date, interval: Interval): Date {
  const d = new Date(t);
  if (interval === 'hour') d.setUTCMinutes(0, 0, 0);
  else {
    d.setUTCHours(0, 0, 0, 0);
    if (interval === 'week') d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
  }
  return d;
}

function nextBucket(t: Date, interval: Interval): Date {
  const d = new Date(t);
  if (interval === 'hour') d.setUTCHours(d.getUTCHours() + 1);
  else d.setUTCDate(d.getUTCDate() + (interval === 'week' ? 7 : 1));
  return d;
}

/** The buckets covering [from, to); throws when there would be more than MAX_BUCKETS. */
export function buckets(from: Date, to: Date, interval: Interval): string[] {
  const out: string[] = [];
  for (let b = bucketStart(from, interval); b < to; b = nextBucket(b, interval)) {
    out.push(b.toISOString());
    if (out.length > MAX_BUCKETS) throw new DomainError('ANALYTICS_RANGE_TOO_LARGE', `The range holds more than ${MAX_BUCKETS} ${interval} intervals.`, { maxBuckets: MAX_BUCKETS });
  }
  return out;
}

const ms = (a: string, b: string) => Date.parse(b) - Date.parse(a);

/** How many asOf folds run at once, and how many of one workspace. */
export const AS_OF_FOLDS_AT_ONCE = 2;
/** asOf answers of one workspace that may wait for a turn; more: 429 RATE_LIMITED. */
export const AS_OF_WAITING_PER_WORKSPACE = 4;

const foldTurns = new WeakMap<AppContext, FairTurns>();

/**
 * The turns of asOf folds of this app: AS_OF_FOLDS_AT_ONCE at once, one per workspace, the
 * workspaces waiting taking turns (round robin), AS_OF_WAITING_PER_WORKSPACE waiting per
 * workspace (more: TurnQueueFullError).
 */
export function asOfFoldTurns(ctx: AppContext): FairTurns {
  let turns = foldTurns.get(ctx);
  if (!turns) foldTurns.set(ctx, (turns = new FairTurns(AS_OF_FOLDS_AT_ONCE, 1, AS_OF_WAITING_PER_WORKSPACE)));
  return turns;
}

/**
 * Analytics of one workspace over [from, to), read from the analytics projection, or,
 * with `asOf`, from the workspace's events up to that time folded through the same
 * projection (foldWorkspaceUpTo), in the workspace's turn (asOfFoldTurns). `signal`: the
 * request went away; a fold still waiting for its turn gives its place up.
 */
export async function workspaceAnalytics(ctx: AppContext, r: AnalyticsRequest, signal?: AbortSignal) {
  if (!r.asOf) {
    // Whatever is in the log now (searches recorded a moment ago included) is counted.
    await ctx.runner.waitFor(await ctx.eventStore.headPosition(), ctx.config.readYourWritesMs);
    return compute(ctx, ctx.readStore, r);
  }
  const asOf = r.asOf;
  return asOfFoldTurns(ctx).run(r.workspaceId, () => analyticsAsOf(ctx, r, asOf, foldWorkspaceUpTo), signal);
}

/** A fold of one workspace's analytics events up to `asOf` (ISO) into `store`. */
export type AsOfFold = (ctx: AppContext, store: ReadStore, workspaceId: string, asOf: string) => Promise<void>;

/** The analytics answer with `asOf`, from a scratch store the given fold fills (the whole-log fold is the tests' oracle). */
export async function analyticsAsOf(ctx: AppContext, r: AnalyticsRequest, asOf: Date, fold: AsOfFold) {
  const store = ctx.scratchReadStore();
  try {
    await fold(ctx, store, r.workspaceId, asOf.toISOString());
    return await compute(ctx, store, r);
  } finally {
    await store.close();
  }
}

const tooMany = (max: number) =>
  new DomainError('ANALYTICS_RANGE_TOO_LARGE', `The workspace's history up to asOf holds more than ${max} events.`, { maxRows: max });

const mineUpTo = (workspaceId: string, asOf: string) => (e: RecordedEvent) =>
  e.metadata.occurredAt <= asOf && (e.data as { workspaceId?: unknown } | null)?.workspaceId === workspaceId;

/**
 * The events of the log in (after, head] that the fold of `workspaceId` up to `asOf` takes:
 * those of that time whose data names the workspace. Reads every tenant's events of that span.
 */
async function logEventsOf(ctx: AppContext, workspaceId: string, asOf: string, after: number, head: number, budget: number): Promise<RecordedEvent[]> {
  const mine = mineUpTo(workspaceId, asOf);
  const out: RecordedEvent[] = [];
  let position = after;
  while (position < head) {
    const batch = await ctx.eventStore.readAll(position, 1000);
    if (batch.length === 0) break;
    position = batch[batch.length - 1].position;
    for (const e of batch) if (e.position <= head && mine(e)) out.push(e);
    if (out.length > budget) throw tooMany(ctx.config.analyticsMaxRows);
    // Other requests take their turn between batches.
    await new Promise((resolve) => setImmediate(resolve));
  }
  return out;
}

/**
 * The fold as it was first written, and the oracle of the workspace-scoped one: the whole
 * log, every tenant's events, read up to its head, the workspace's events of up to `asOf`
 * applied. Its cost follows the log's size, whatever the workspace's.
 */
export const foldWholeLogUpTo: AsOfFold = async (ctx, store, workspaceId, asOf) => {
  const head = await ctx.eventStore.headPosition();
  const events = await logEventsOf(ctx, workspaceId, asOf, 0, head, ctx.config.analyticsMaxRows);
  await analyticsProjection(store).apply(events);
};

/** Reads of document streams in flight at once (an EventStoreDB read is a round trip). */
const STREAM_READS_AT_ONCE = 8;
/** Work of a fold done in one go before other requests get the event loop. */
const SLICE_MS = 8;

/**
 * The position up to which the analytics read model of `store` holds every event, with its
 * layout this code reads; 0 when it holds none usable (another version, or being cleared).
 */
async function analyticsCoverage(store: ReadStore): Promise<number> {
  const [version, clearing, checkpoint] = await Promise.all([
    store.getCheckpoint(versionKey(ANALYTICS_PROJECTION)),
    store.getCheckpoint(clearingKey(ANALYTICS_PROJECTION)),
    store.getCheckpoint(ANALYTICS_PROJECTION),
  ]);
  return (version || 1) === ANALYTICS_VERSION && clearing === 0 ? checkpoint : 0;
}

/**
 * The fold of one workspace up to `asOf`, reading only that workspace's events: the same
 * events the whole-log fold applies of the answer's collections (documents, runs, searches),
 * in log order, so the same answer. The live analytics read model is the index by workspace:
 *
 * - Documents and their runs: every document the read model holds for the workspace
 *   (deleted and erased ones too: its rows are never removed) is read from its stream
 *   `document-<id>`, only the event types the rows are made of (ANALYTICS_DOCUMENT_EVENTS:
 *   no text, chunks or vectors, so an erased document reads as any other). A document's
 *   events all name its workspace, and its upload is the first of them, so every document
 *   with an event up to the read model's checkpoint is there.
 * - Searches: a search is one SearchPerformed in its own stream, and its row is made of that
 *   event alone (`at` is its time), never changed after: the rows of the workspace up to
 *   `asOf` are what the fold would put, and are copied (a stream read per search would cost
 *   more than the whole log for a busy workspace).
 * - Events after the read model's checkpoint (it follows the log a moment behind) are read
 *   from the log, as the whole-log fold does: only that span, usually a few events. With no
 *   usable read model (another layout, being rebuilt: checkpoint 0) that span is the whole log,
 *   and this is the whole-log fold.
 * - PublicLinkUsed (the link usage report) is not folded: the answer does not read it.
 *
 * The checkpoint is read before the rows, and again after: a rebuild that began meanwhile
 * (checkpoint moved back) may have shown rows half cleared, and the whole log is folded instead.
 */
export const foldWorkspaceUpTo: AsOfFold = async (ctx, store, workspaceId, asOf) => {
  const live = ctx.readStore;
  const max = ctx.config.analyticsMaxRows;
  const head = await ctx.eventStore.headPosition();
  const covered = Math.min(await analyticsCoverage(live), head);
  if (covered === 0) return foldWholeLogUpTo(ctx, store, workspaceId, asOf);

  const mine = mineUpTo(workspaceId, asOf);
  // A large workspace's reads (many local statements, each answered at once) leave the event loop its turns.
  let slice = performance.now();
  const breathe = async () => {
    if (performance.now() - slice < SLICE_MS) return;
    await new Promise((resolve) => setImmediate(resolve));
    slice = performance.now();
  };
  const searches = await analyticsSearchesCollection(live).find({ workspaceId, at: { $lte: asOf } }, { limit: max + 1 });
  if (searches.length > max) throw tooMany(max);
  const documents = await analyticsDocumentsCollection(live).find({ workspaceId });
  const events: RecordedEvent[] = [];
  const ids = documents.map((d) => d.id);
  let next = 0;
  let stop = false;
  const reader = async () => {
    while (next < ids.length && !stop) {
      const id = ids[next++];
      for (const e of await ctx.eventStore.readStream(documentStream(id), 0, ANALYTICS_DOCUMENT_EVENTS)) {
        // Past the checkpoint: read from the log below (with any document uploaded since).
        if (e.position <= covered && mine(e)) events.push(e);
      }
      if (events.length + searches.length > max) {
        stop = true;
        throw tooMany(max);
      }
      await breathe();
    }
  };
  await Promise.all(Array.from({ length: Math.min(STREAM_READS_AT_ONCE, ids.length) }, reader));
  if ((await analyticsCoverage(live)) < covered) {
    // Cleared for a rebuild while its rows were read: they may have missed some.
    return foldWholeLogUpTo(ctx, store, workspaceId, asOf);
  }
  const recent = await logEventsOf(ctx, workspaceId, asOf, covered, head, max - events.length - searches.length);
  const copies = analyticsSearchesCollection(store);
  await store.transaction(async () => {
    for (const s of searches) {
      await copies.put(s);
      await breathe();
    }
  });
  await analyticsProjection(store).apply([...events.sort((a, b) => a.position - b.position), ...recent]);
};

async function compute(ctx: AppContext, store: ReadStore, r: AnalyticsRequest) {
  const from = r.from.toISOString();
  const to = r.to.toISOString();
  const series = buckets(r.from, r.to, r.interval);
  const bucketOf = (iso: string) => bucketStart(new Date(iso), r.interval).toISOString();
  const max = ctx.config.analyticsMaxRows;
  const bounded = async <T>(what: string, rows: Promise<T[]>): Promise<T[]> => {
    const got = await rows;
    if (got.length > max) throw new DomainError('ANALYTICS_RANGE_TOO_LARGE', `The range holds more than ${max} ${what}; narrow from/to.`, { maxRows: max });
    return got;
  };
  const ws = r.workspaceId;
  const range = { $gte: from, $lt: to };
  const [added, deleted, runs, searches] = await Promise.all([
    bounded('documents', analyticsDocumentsCollection(store).find({ workspaceId: ws, uploadedAt: range }, { limit: max + 1 })),
    bounded('documents', analyticsDocumentsCollection(store).find({ workspaceId: ws, deletedAt: range }, { limit: max + 1 })),
    bounded('processing runs', analyticsRunsCollection(store).find({ workspaceId: ws, startedAt: range }, { limit: max + 1 })),
    bounded('searches', analyticsSearchesCollection(store).find({ workspaceId: ws, at: range }, { sort: [{ field: 'at', direction: 'asc' }], limit: max + 1 })),
  ]);

  const perBucket = new Map(series.map((b) => [b, { start: b, documentsAdded: 0, documentsDeleted: 0, verified: 0, failed: 0, workspace: 0, link: 0, tool: 0 }]));
  for (const d of added) perBucket.get(bucketOf(d.uploadedAt))!.documentsAdded += 1;
  for (const d of deleted) perBucket.get(bucketOf(d.deletedAt!))!.documentsDeleted += 1;

  const ended = runs.filter((x) => x.outcome !== null);
  for (const x of ended) {
    const b = perBucket.get(bucketOf(x.startedAt))!;
    if (x.outcome === 'VERIFIED') b.verified += 1;
    else b.failed += 1;
  }
  const failuresByCode = new Map<string, number>();
  for (const x of ended) if (x.outcome === 'FAILED') failuresByCode.set(x.code ?? 'UNKNOWN', (failuresByCode.get(x.code ?? 'UNKNOWN') ?? 0) + 1);

  for (const s of searches) perBucket.get(bucketOf(s.at))![s.channel] += 1;
  const channelStats = (rows: AnalyticsSearchView[]) => ({
    searches: rows.length,
    zeroResults: rows.filter((s) => s.resultCount === 0).length,
    latencyMs: (({ p50, p95, max: m }) => ({ p50, p95, max: m }))(spread(rows.map((s) => s.latencyMs))),
  });
  const hits = new Map<string, number>();
  for (const s of searches) for (const id of s.hitDocumentIds) hits.set(id, (hits.get(id) ?? 0) + 1);
  const byLink = new Map<string, AnalyticsSearchView[]>();
  for (const s of searches) if (s.linkId) byLink.set(s.linkId, [...(byLink.get(s.linkId) ?? []), s]);
  const linkViews = await searchLinksCollection(ctx.readStore).getMany([...byLink.keys()]);
  const linkView = new Map(linkViews.map((l) => [l.id, l]));

  const links = [];
  for (const [linkId, rows] of byLink) {
    const view = linkView.get(linkId);
    // Query text: only what history mode stored (outside the log, deleted after 90 days), and only for a present-day answer.
    const queries = !r.asOf && view?.historyMode ? await storedQueryCounts(ctx, linkId, from, to, TOP) : undefined;
    links.push({
      linkId,
      name: view?.name ?? null,
      historyMode: view?.historyMode ?? false,
      ...channelStats(rows),
      byChannel: { link: rows.filter((s) => s.channel === 'link').length, tool: rows.filter((s) => s.channel === 'tool').length },
      ...(queries ? { topQueries: queries } : {}),
    });
  }
  links.sort((a, b) => b.searches - a.searches || a.linkId.localeCompare(b.linkId));

  const ofChannel = (c: SearchChannel) => channelStats(searches.filter((s) => s.channel === c));
  return {
    workspaceId: ws,
    from,
    to,
    interval: r.interval,
    asOf: r.asOf ? r.asOf.toISOString() : null,
    documents: { added: added.length, deleted: deleted.length },
    processing: {
      runs: runs.length,
      verified: ended.filter((x) => x.outcome === 'VERIFIED').length,
      failed: ended.filter((x) => x.outcome === 'FAILED').length,
      unfinished: runs.length - ended.length,
      failuresByCode: [...failuresByCode].map(([code, count]) => ({ code, count })).sort((a, b) => b.count - a.count || a.code.localeCompare(b.code)),
      /** Documents uploaded in the range that reached VERIFIED: upload → first VERIFIED. */
      uploadToVerifiedMs: spread(added.filter((d) => d.firstVerifiedAt).map((d) => ms(d.uploadedAt, d.firstVerifiedAt!))),
      runDurationMs: spread(ended.map((x) => ms(x.startedAt, x.endedAt!))),
    },
    searches: {
      ...channelStats(searches),
      byChannel: { workspace: ofChannel('workspace'), link: ofChannel('link'), tool: ofChannel('tool') },
    },
    topDocuments: [...hits].map(([documentId, count]) => ({ documentId, hits: count })).sort((a, b) => b.hits - a.hits || a.documentId.localeCompare(b.documentId)).slice(0, TOP),
    links,
    series: [...perBucket.values()],
  };
}

export { ANALYTICS_PROJECTION };
