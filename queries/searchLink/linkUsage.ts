import { AppContext } from '../../src/app/context';
import { sha256Hex } from '../../src/util/crypto';
import { LINK_QUERY_HISTORY, LINK_USAGE, SearchLinkView } from '../../projections/searchLink/searchLinkProjection';

/** Where a link was used: the public HTTP search, the tool endpoint, or GET /s/<linkId>. */
export type LinkChannel = 'http' | 'mcp' | 's';

/** One minute of one link's traffic. No query text, no token, no raw IP or user agent. */
export interface LinkUsageBucket {
  id: string; // `${linkId}:${minute ISO}`
  linkId: string;
  workspaceId: string;
  minute: string;
  count: number;
  errors: number;
  byChannel: Partial<Record<LinkChannel, number>>;
  /** Latency samples in ms (capped per bucket), for percentiles. */
  latencies: number[];
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
const MAX_SAMPLES = 500;
const MAX_HASHES = 50;

const usage = (ctx: AppContext) => ctx.readStore.collection<LinkUsageBucket>(LINK_USAGE, [{ fields: ['linkId'] }]);
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

// Writes are serialised in-process: a read-modify-write per bucket must not interleave.
let queue: Promise<unknown> = Promise.resolve();

/** Record one public use of a link (never throws; usage is best effort). */
export function recordLinkUse(ctx: AppContext, link: SearchLinkView, s: UsageSample): Promise<void> {
  const now = ctx.now();
  const minute = new Date(Math.floor(now.getTime() / 60000) * 60000).toISOString();
  const task = queue.then(async () => {
    const col = usage(ctx);
    const id = `${link.id}:${minute}`;
    const b = (await col.get(id)) ?? { id, linkId: link.id, workspaceId: link.workspaceId, minute, count: 0, errors: 0, byChannel: {}, latencies: [], clientHashes: [], agentHashes: [] };
    b.count += 1;
    if (!s.ok) b.errors += 1;
    b.byChannel[s.channel] = (b.byChannel[s.channel] ?? 0) + 1;
    if (b.latencies.length < MAX_SAMPLES) b.latencies.push(Math.round(s.latencyMs * 100) / 100);
    if (s.ip) {
      const h = hashClientAttribute(ctx, 'ip', s.ip);
      if (!b.clientHashes.includes(h) && b.clientHashes.length < MAX_HASHES) b.clientHashes.push(h);
    }
    if (s.userAgent) {
      const h = hashClientAttribute(ctx, 'ua', s.userAgent);
      if (!b.agentHashes.includes(h) && b.agentHashes.length < MAX_HASHES) b.agentHashes.push(h);
    }
    await col.put(b);
    if (link.historyMode && s.query !== undefined) {
      await history(ctx).put({ id: `${link.id}:${now.getTime()}:${Math.random().toString(36).slice(2, 10)}`, linkId: link.id, workspaceId: link.workspaceId, query: s.query, at: now.toISOString() });
    }
  });
  queue = task.catch(() => undefined);
  return task.then(
    () => undefined,
    (err: unknown) => ctx.logger.warn({ errName: err instanceof Error ? err.name : 'unknown' }, 'recording link usage failed'),
  );
}

/** Wait for recorded uses to be written (before reading usage). */
export async function flushLinkUsage(): Promise<void> {
  await queue;
}

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/** Requests and latency percentiles per hour over the last `hours` hours. */
export async function linkUsageReport(ctx: AppContext, link: SearchLinkView, hours: number) {
  await flushLinkUsage();
  const now = ctx.now().getTime();
  const from = new Date(Math.floor((now - hours * 3600_000) / 3600_000 + 1) * 3600_000).toISOString();
  const buckets = await usage(ctx).find({ linkId: link.id, minute: { $gte: from } }, { sort: [{ field: 'minute', direction: 'asc' }] });
  const byHour = new Map<string, LinkUsageBucket[]>();
  for (const b of buckets) {
    const hour = `${b.minute.slice(0, 13)}:00:00.000Z`;
    byHour.set(hour, [...(byHour.get(hour) ?? []), b]);
  }
  const summarise = (bs: LinkUsageBucket[]) => {
    const lat = bs.flatMap((b) => b.latencies).sort((a, b) => a - b);
    const channels: Partial<Record<LinkChannel, number>> = {};
    for (const b of bs) for (const [k, v] of Object.entries(b.byChannel) as [LinkChannel, number][]) channels[k] = (channels[k] ?? 0) + v;
    return {
      requests: bs.reduce((n, b) => n + b.count, 0),
      errors: bs.reduce((n, b) => n + b.errors, 0),
      byChannel: channels,
      latencyMs: { p50: percentile(lat, 50), p95: percentile(lat, 95) },
      distinctClients: new Set(bs.flatMap((b) => b.clientHashes)).size,
    };
  };
  return {
    linkId: link.id,
    historyMode: link.historyMode,
    window: { from, to: new Date(now).toISOString(), hours },
    totals: summarise(buckets),
    hourly: [...byHour.entries()].map(([hour, bs]) => ({ hour, ...summarise(bs) })),
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
  await flushLinkUsage();
  const cutoff = new Date(ctx.now().getTime() - HISTORY_RETENTION_DAYS * 24 * 3600_000).toISOString();
  const since = from > cutoff ? from : cutoff;
  const rows = await history(ctx).find({ linkId, at: { $gte: since, $lt: to } }, { limit: ctx.config.analyticsMaxRows });
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.query, (counts.get(r.query) ?? 0) + 1);
  return [...counts].map(([query, count]) => ({ query, count })).sort((a, b) => b.count - a.count || a.query.localeCompare(b.query)).slice(0, limit);
}
