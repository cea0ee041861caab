import { Projection, ReadModelHandler, readModelProjection } from '../../src/core/projection';
import { ReadStore } from '../../src/ports/readStore';
import { DocumentEvent } from '../../src/domain/document/events';
import { LinkUseChannel, SearchChannel, SearchEvent } from '../../src/domain/search/events';

/*
 * The facts behind GET /v1/workspaces/:id/analytics, derived from the log only (so a
 * rebuild, or a fold up to `asOf`, gives the same answer): one row per document, per
 * processing run and per search, and per link and minute of public link uses (the
 * link's usage report). The queries aggregate them over a time range.
 */

export interface AnalyticsDocumentView {
  id: string; // documentId
  workspaceId: string;
  uploadedAt: string;
  deletedAt: string | null;
  /** The end of the first run that reached VERIFIED; null until then. */
  firstVerifiedAt: string | null;
}

export interface AnalyticsRunView {
  id: string; // processingId
  documentId: string;
  workspaceId: string;
  reason: string;
  startedAt: string;
  outcome: 'VERIFIED' | 'FAILED' | null;
  code: string | null;
  endedAt: string | null;
}

export interface AnalyticsSearchView {
  id: string; // searchId
  workspaceId: string;
  at: string;
  channel: SearchChannel;
  linkId: string | null;
  latencyMs: number;
  resultCount: number;
  hitDocumentIds: string[];
}

/** One minute of one link's public uses (from PublicLinkUsed): no query text, IP or user agent. */
export interface AnalyticsLinkUsageView {
  id: string; // `${linkId}:${minute ISO}`
  linkId: string;
  workspaceId: string;
  minute: string;
  count: number;
  errors: number;
  byChannel: Partial<Record<LinkUseChannel, number>>;
  /** Latency samples in ms (the first MAX_LINK_USAGE_SAMPLES of the minute), for percentiles. */
  latencies: number[];
}

/** Latency samples kept per link and minute (a link answers at most a few dozen uses a minute). */
export const MAX_LINK_USAGE_SAMPLES = 500;

const DOCS = 'analytics_documents';
const RUNS = 'analytics_runs';
const SEARCHES = 'analytics_searches';
const LINK_USAGE = 'analytics_link_usage';

export const analyticsDocumentsCollection = (s: ReadStore) => s.collection<AnalyticsDocumentView>(DOCS, [{ fields: ['workspaceId', 'uploadedAt'] }, { fields: ['workspaceId', 'deletedAt'] }]);
export const analyticsRunsCollection = (s: ReadStore) => s.collection<AnalyticsRunView>(RUNS, [{ fields: ['workspaceId', 'startedAt'] }]);
export const analyticsSearchesCollection = (s: ReadStore) => s.collection<AnalyticsSearchView>(SEARCHES, [{ fields: ['workspaceId', 'at'] }]);

export const analyticsLinkUsageCollection = (s: ReadStore) => s.collection<AnalyticsLinkUsageView>(LINK_USAGE, [{ fields: ['linkId', 'minute'] }]);

export const ANALYTICS_PROJECTION = 'analytics';
/** The layout version of the analytics read model (see readModelProjection's `version`). */
export const ANALYTICS_VERSION = 2;

/**
 * The events the documents and runs of the analytics read model are made of (all in the
 * document's stream `document-<id>`). SearchPerformed rows are one event each, in streams of
 * their own; PublicLinkUsed feeds the link usage report only.
 */
export const ANALYTICS_DOCUMENT_EVENTS: ReadonlySet<string> = new Set(['DocumentUploaded', 'DocumentDeleted', 'DocumentProcessingStarted', 'DocumentVerified', 'DocumentProcessingFailed']);

export function analyticsProjection(store: ReadStore): Projection {
  const docs = analyticsDocumentsCollection(store);
  const runs = analyticsRunsCollection(store);
  const searches = analyticsSearchesCollection(store);
  const linkUsage = analyticsLinkUsageCollection(store);
  const handle: ReadModelHandler = async (event) => {
    const e = event as unknown as DocumentEvent | SearchEvent;
    const at = event.metadata.occurredAt;
    switch (e.type) {
      case 'DocumentUploaded':
        await docs.put({ id: e.data.documentId, workspaceId: e.data.workspaceId, uploadedAt: at, deletedAt: null, firstVerifiedAt: null });
        return;
      case 'DocumentDeleted': {
        const d = await docs.get(e.data.documentId);
        if (d) await docs.put({ ...d, deletedAt: at });
        return;
      }
      case 'DocumentProcessingStarted':
        await runs.put({ id: e.data.processingId, documentId: e.data.documentId, workspaceId: e.data.workspaceId, reason: e.data.reason, startedAt: at, outcome: null, code: null, endedAt: null });
        return;
      case 'DocumentVerified':
      case 'DocumentProcessingFailed': {
        const run = await runs.get(e.data.processingId);
        if (!run || run.outcome) return;
        const failed = e.type === 'DocumentProcessingFailed';
        await runs.put({ ...run, outcome: failed ? 'FAILED' : 'VERIFIED', code: failed ? e.data.code : null, endedAt: at });
        if (!failed) {
          const d = await docs.get(e.data.documentId);
          if (d && !d.firstVerifiedAt) await docs.put({ ...d, firstVerifiedAt: at });
        }
        return;
      }
      case 'SearchPerformed':
        await searches.put({
          id: e.data.searchId,
          workspaceId: e.data.workspaceId,
          at,
          channel: e.data.channel,
          linkId: e.data.linkId,
          latencyMs: e.data.latencyMs,
          resultCount: e.data.resultCount,
          hitDocumentIds: e.data.hitDocumentIds,
        });
        return;
      case 'PublicLinkUsed': {
        const minute = new Date(Math.floor(Date.parse(at) / 60000) * 60000).toISOString();
        const id = `${e.data.linkId}:${minute}`;
        const b = (await linkUsage.get(id)) ?? { id, linkId: e.data.linkId, workspaceId: e.data.workspaceId, minute, count: 0, errors: 0, byChannel: {}, latencies: [] };
        b.count += 1;
        if (e.data.outcome === 'error') b.errors += 1;
        b.byChannel[e.data.channel] = (b.byChannel[e.data.channel] ?? 0) + 1;
        if (b.latencies.length < MAX_LINK_USAGE_SAMPLES) b.latencies.push(e.data.latencyMs);
        await linkUsage.put(b);
        return;
      }
      default:
        return;
    }
  };
  // Version 2: per-link usage buckets (PublicLinkUsed) added; older stores are rebuilt from the log.
  return readModelProjection(ANALYTICS_PROJECTION, store, [DOCS, RUNS, SEARCHES, LINK_USAGE], handle, { version: ANALYTICS_VERSION });
}
