import { Projection, readModelProjection } from '../../src/core/projection';
import { ReadStore } from '../../src/ports/readStore';
import { DocumentEvent } from '../../src/domain/document/events';
import { SearchChannel, SearchEvent } from '../../src/domain/search/events';

/*
 * The facts behind GET /v1/workspaces/:id/analytics, derived from the log only (so a
 * rebuild, or a fold up to `asOf`, gives the same answer): one row per document, per
 * processing run and per search. The query aggregates them over a time range.
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

const DOCS = 'analytics_documents';
const RUNS = 'analytics_runs';
const SEARCHES = 'analytics_searches';

export const analyticsDocumentsCollection = (s: ReadStore) => s.collection<AnalyticsDocumentView>(DOCS, [{ fields: ['workspaceId', 'uploadedAt'] }, { fields: ['workspaceId', 'deletedAt'] }]);
export const analyticsRunsCollection = (s: ReadStore) => s.collection<AnalyticsRunView>(RUNS, [{ fields: ['workspaceId', 'startedAt'] }]);
export const analyticsSearchesCollection = (s: ReadStore) => s.collection<AnalyticsSearchView>(SEARCHES, [{ fields: ['workspaceId', 'at'] }]);

export const ANALYTICS_PROJECTION = 'analytics';

export function analyticsProjection(store: ReadStore): Projection {
  const docs = analyticsDocumentsCollection(store);
  const runs = analyticsRunsCollection(store);
  const searches = analyticsSearchesCollection(store);
  return readModelProjection(ANALYTICS_PROJECTION, store, [DOCS, RUNS, SEARCHES], async (event) => {
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
      default:
        return;
    }
  });
}
