import { AppContext } from '../../src/app/context';
import { sha256Hex } from '../../src/util/crypto';
import { LINK_QUERY_HISTORY, LINK_USAGE, SearchLinkView, searchLinksCollection } from '../../projections/searchLink/searchLinkProjection';
import { analyticsLinkUsageCollection, AnalyticsLinkUsageView } from '../../projections/analytics/analyticsProjection';
import { LinkUseChannel } from '../../src/domain/search/events';

/** Where a link was used: the public HTTP search, the tool endpoint, or GET /s/<linkId>. */
export type LinkChannel = LinkUseChannel;

/**
 * One minute of one link's clients, kept OUTSIDE the event log as an operational counter for
 * abuse detection: peppered hashes of client IPs and user agents must never enter the immutable
 * log, and the usage report's `distinctClients` is counted from here. `count` is the number of
 * uses recorded here (an operational tally beside the hashes; the report's request counts, errors,
 * channels and latencies come from PublicLinkUsed events in the log). Deleted with the workspace.
 */
export interface LinkClientBucket {
  id: string; // `${linkId}:${minute ISO}`
  linkId: string;
  workspaceId: string;
  minute: string;
  count: number;
  /** SHA-256 of (pepper, client IP) and of (pepper, user agent): for abuse detection only. */
  clientHashes: string[];
  agentHashes: string[];
}

export interface LinkQueryRecord {
  id: string;
  linkId: string;
  workspaceId: string;
  query: string;
  at: string;
}

export const HISTORY_RETENTION_DAYS = 90;
const MAX_HASHES = 50;

const clients = (ctx: AppContext) => ctx.readStore.collection<LinkClientBucket>(LINK_USAGE, [{ fields: ['linkId'] }]);
const history = (ctx: AppContext) => ctx.readStore.collection<LinkQueryRecord>(LINK_QUERY_HISTORY, [{ fields: ['linkId'] }, { fields: ['at'] }]);

/** One-way hash of a client attribute. Peppered with the install's secret so a leaked table cannot be reversed by enumerating IPs. */
export const hashClientAttribute = (ctx: AppContext, kind: 'ip' | 'ua', value: string): string => sha256Hex(`${kind}:${ctx.jwtSecret}:${value}`);

export interface UsageSample {
  channel: LinkChannel;
  latencyMs: number;
  ok: boolean;
  ip?: string;
  userAgent?: string;
  /** Stored only when the link's historyMode is on. */
  query?: string;
}

/**
 * The tail of each link's pending writes, by link id (dropped once it has none). A link's
 * writes run one after another in this process (a read-modify-write of its minute's bucket
 * must not interleave); those of different links touch different rows and do not wait for each
 * other. So a link's usage report waits for its own link's writes only: another tenant's heavy
 * public-search traffic no longer delays it (one queue for every link did).
 */
const pending = new Map<string, Promise<void>>();

function enqueue(linkId: string, write: () => Promise<void>): Promise<void> {
  const task = (pending.get(linkId) ?? Promise.resolve()).then(write);
  const tail = task.catch(() => undefined);
  pending.set(linkId, tail);
  void tail.then(() => {
    if (pending.get(linkId) === tail) pending.delete(linkId);
  });
  return task;
}

/**
 * Record, outside the log, what of one public use must not enter it: the client and agent
 * hashes (operational, abuse detection) and, for history-mode links, the query text (kept 90
 * days). The use itself is an event (recordLinkUsed); never throws, this is best effort.
 */
export function recordLinkUse(ctx: AppContext, link: SearchLinkView, s: UsageSample): Promise<void> {
  const now = ctx.now();
  const minute = new Date(Math.floor(now.getTime() / 60000) * 60000).toISOString();
  // In a read-store transaction, against the link as it is now rather than as the request saw
  // it: a use answered just before the link was revoked, its history turned off or its
  // workspace deleted would otherwise write its query text (and hashes) after that erasure
  // had run, and keep it. The projection applies those events in transactions too, so the
  // check and the write cannot straddle one.
  const task = enqueue(link.id, () => ctx.readStore.transaction(() => write()));
  const write = async (): Promise<void> => {
    const current = await searchLinksCollection(ctx.readStore).get(link.id);
    if (!current) return; // its workspace was deleted
    const col = clients(ctx);
    const id = `${link.id}:${minute}`;
    const b = (await col.get(id)) ?? { id, linkId: link.id, workspaceId: link.workspaceId, minute, count: 0, clientHashes: [], agentHashes: [] };
    b.count += 1;
    if (s.ip) {
      const h = hashClientAttribute(ctx, 'ip', s.ip);
      if (!b.clientHashes.includes(h) && b.clientHashes.length < MAX_HASHES) b.clientHashes.push(h);
    }
    if (s.userAgent) {
      const h = hashClientAttribute(ctx, 'ua', s.userAgent);
      if (!b.agentHashes.includes(h) && b.agentHashes.length < MAX_HASHES) b.agentHashes.push(h);
    }
    await col.put(b);
    if (current.historyMode && !current.revoked && s.query !== undefined) {
      await history(ctx).put({ id: `${link.id}:${now.getTime()}:${Math.random().toString(36).slice(2, 10)}`, linkId: link.id, workspaceId: link.workspaceId, query: s.query, at: now.toISOString() });
    }
  };
  return task.then(
    () => undefined,
    (err: unknown) => ctx.logger.warn({ errName: err instanceof Error ? err.name : 'unknown' }, 'recording link usage failed'),
  );
}

/** Wait for the uses of `linkId` recorded so far to be written (before reading its usage); without it, those of every link. */
export async function flushLinkUsage(linkId?: string): Promise<void> {
  if (linkId !== undefined) await pending.get(linkId);
  else await Promise.all([...pending.values()]);
}

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/**
 * Requests, errors, channels and latency percentiles per hour over the last `hours` hours,
 * derived from the log (PublicLinkUsed, through the analytics projection, so a rebuild gives
 * the same answer); distinct clients from the operational hashes kept outside the log.
 */
export async function linkUsageReport(ctx: AppContext, link: SearchLinkView, hours: number) {
  await flushLinkUsage(link.id);
  // Uses recorded a moment ago are counted: wait for the projection to reach the log's head.
  await ctx.runner.waitFor(await ctx.eventStore.headPosition(), ctx.config.readYourWritesMs);
  const now = ctx.now().getTime();
  const from = new Date(Math.floor((now - hours * 3600_000) / 3600_000 + 1) * 3600_000).toISOString();
  const since = { linkId: link.id, minute: { $gte: from } };
  const asc = { sort: [{ field: 'minute', direction: 'asc' as const }] };
  const [buckets, clientBuckets] = await Promise.all([analyticsLinkUsageCollection(ctx.readStore).find(since, asc), clients(ctx).find(since, asc)]);
  const hourOf = (minute: string) => `${minute.slice(0, 13)}:00:00.000Z`;
  const byHour = new Map<string, AnalyticsLinkUsageView[]>();
  for (const b of buckets) byHour.set(hourOf(b.minute), [...(byHour.get(hourOf(b.minute)) ?? []), b]);
  const clientsByHour = new Map<string, LinkClientBucket[]>();
  for (const b of clientBuckets) clientsByHour.set(hourOf(b.minute), [...(clientsByHour.get(hourOf(b.minute)) ?? []), b]);
  const summarise = (bs: AnalyticsLinkUsageView[], cs: LinkClientBucket[]) => {
    const lat = bs.flatMap((b) => b.latencies).sort((a, b) => a - b);
    const channels: Partial<Record<LinkChannel, number>> = {};
    for (const b of bs) for (const [k, v] of Object.entries(b.byChannel) as [LinkChannel, number][]) channels[k] = (channels[k] ?? 0) + v;
    return {
      requests: bs.reduce((n, b) => n + b.count, 0),
      errors: bs.reduce((n, b) => n + b.errors, 0),
      byChannel: channels,
      latencyMs: { p50: percentile(lat, 50), p95: percentile(lat, 95) },
      distinctClients: new Set(cs.flatMap((b) => b.clientHashes)).size,
    };
  };
  return {
    linkId: link.id,
    historyMode: link.historyMode,
    window: { from, to: new Date(now).toISOString(), hours },
    totals: summarise(buckets, clientBuckets),
    hourly: [...byHour.entries()].map(([hour, bs]) => ({ hour, ...summarise(bs, clientsByHour.get(hour) ?? []) })),
    storedQueries: link.historyMode ? await history(ctx).count({ linkId: link.id }) : 0,
  };
}

/** Delete stored query text older than the retention period. */
export async function sweepQueryHistory(ctx: AppContext, retentionDays = HISTORY_RETENTION_DAYS): Promise<number> {
  const cutoff = new Date(ctx.now().getTime() - retentionDays * 24 * 3600_000).toISOString();
  return history(ctx).deleteMany({ at: { $lt: cutoff } });
}

/** Background service: sweep on start, then hourly. */
export function queryHistorySweeper(ctx: AppContext): AppContext['services'][number] {
  let timer: NodeJS.Timeout | undefined;
  const sweep = () =>
    sweepQueryHistory(ctx)
      .then((n) => n > 0 && ctx.logger.info({ deleted: n }, 'expired search-link query history deleted'))
      .catch((err: unknown) => ctx.logger.warn({ errName: err instanceof Error ? err.name : 'unknown' }, 'query history sweep failed'));
  return {
    name: 'query-history-sweeper',
    start: async () => {
      await sweep();
      timer = setInterval(() => void sweep(), 3600_000);
      timer.unref();
    },
    stop: async () => {
      if (timer) clearInterval(timer);
      await flushLinkUsage();
    },
  };
}

/**
 * Query texts stored for a link (history mode was on when they were asked), in a time range,
 * most asked first. Never older than the retention period, even before the sweep has run.
 */
export async function storedQueryCounts(ctx: AppContext, linkId: string, from: string, to: string, limit: number): Promise<{ query: string; count: number }[]> {
  await flushLinkUsage(linkId);
  const cutoff = new Date(ctx.now().getTime() - HISTORY_RETENTION_DAYS * 24 * 3600_000).toISOString();
  const since = from > cutoff ? from : cutoff;
  const rows = await history(ctx).find({ linkId, at: { $gte: since, $lt: to } }, { limit: ctx.config.analyticsMaxRows });
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.query, (counts.get(r.query) ?? 0) + 1);
  return [...counts].map(([query, count]) => ({ query, count })).sort((a, b) => b.count - a.count || a.query.localeCompare(b.query)).slice(0, limit);
}

/** At most this many stored queries per page of a link's query history. */
export const MAX_QUERY_HISTORY_PAGE = 200;

/**
 * A link's query history (history mode): the stored query texts, newest first, `limit` per page
 * before `before` (an ISO time; the next page starts at the last `at`), never older than the
 * retention period. Empty for a link whose history mode was never on.
 */
export async function storedQueryPage(ctx: AppContext, linkId: string, opts: { before?: string; limit: number }) {
  await flushLinkUsage(linkId);
  const cutoff = new Date(ctx.now().getTime() - HISTORY_RETENTION_DAYS * 24 * 3600_000).toISOString();
  const at: { $gte: string; $lt?: string } = { $gte: cutoff, ...(opts.before ? { $lt: opts.before } : {}) };
  const limit = Math.min(Math.max(1, opts.limit), MAX_QUERY_HISTORY_PAGE);
  const rows = await history(ctx).find({ linkId, at }, { sort: [{ field: 'at', direction: 'desc' }, { field: 'id', direction: 'desc' }], limit: limit + 1 });
  const page = rows.slice(0, limit);
  return {
    data: page.map((r) => ({ query: r.query, at: r.at })),
    nextBefore: rows.length > limit ? page[page.length - 1].at : null,
    retentionDays: HISTORY_RETENTION_DAYS,
  };
}
