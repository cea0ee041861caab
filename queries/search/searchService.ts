import { AppContext } from '../../src/app/context';
import { isVectorModelChanged, Purpose, SearchHit, SearchRequest } from '../../src/ports/searchIndex';
import { activeEmbedder, forgetActiveModel } from '../../src/search/vectorModels';
import { documentsCollection } from '../../projections/document/documentProjection';
import { SearchAbandoned, SearchRefused, searchTurns } from '../../src/search/searchTurns';

export interface WorkspaceSearch {
  workspaceId: string;
  query: string;
  limit: number;
  /** Documents having any of these tag ids (undefined: no tag filter). */
  tags?: string[];
  purpose?: Purpose;
  documentIds?: string[];
  /** Aborted when the client left: a search still waiting for its turn is then not run. */
  signal?: AbortSignal;
}

/**
 * Hybrid (BM25 + dense) search over a workspace's VERIFIED documents, used by the
 * workspace search, the public search link and the tool endpoint. Hits are re-checked
 * against the documents read model (still there and VERIFIED, tags still in the filter), so
 * a document whose tags changed after it was indexed never leaks out of a tag scope.
 */
export async function searchWorkspace(ctx: AppContext, s: WorkspaceSearch): Promise<SearchHit[]> {
  const started = process.hrtime.bigint();
  let ran = true;
  try {
    return await searchHits(ctx, s);
  } catch (err) {
    // Refused, or its client left, before the index was asked: no search was run.
    if (err instanceof SearchRefused) ran = false;
    throw err;
  } finally {
    if (ran) ctx.metrics.search({ mode: 'hybrid', seconds: Number(process.hrtime.bigint() - started) / 1e9 });
  }
}

async function searchHits(ctx: AppContext, s: WorkspaceSearch): Promise<SearchHit[]> {
  if (s.limit <= 0 || (s.tags !== undefined && s.tags.length === 0) || (s.documentIds !== undefined && s.documentIds.length === 0)) return [];
  const filters = { workspaceId: s.workspaceId, ...(s.tags ? { tags: s.tags } : {}), ...(s.purpose ? { purpose: s.purpose } : {}), ...(s.documentIds ? { documentIds: s.documentIds } : {}) };
  // Ask for a few more than needed: the re-check below may drop stale hits.
  const hits = await searchWithActiveModel(ctx, { text: s.query, filters, k: s.limit + 5, mode: 'hybrid' }, s.signal);
  if (hits.length === 0) return [];
  const docs = await documentsCollection(ctx.readStore).getMany([...new Set(hits.map((h) => h.documentId))]);
  const byId = new Map(docs.map((d) => [d.id, d]));
  const wanted = s.tags ? new Set(s.tags) : undefined;
  const out: SearchHit[] = [];
  for (const h of hits) {
    const d = byId.get(h.documentId);
    if (!d || d.workspaceId !== s.workspaceId || d.processingStatus !== 'VERIFIED') continue;
    const tags = d.tags ?? h.tags;
    if (wanted && !tags.some((t) => wanted.has(t))) continue;
    out.push({ ...h, documentTitle: d.title ?? h.documentTitle, tags, score: clamp01(h.score) });
    if (out.length === s.limit) break;
  }
  return out;
}

/**
 * The query embedded with the model of the vectors the index answers with (the old one while
 * a model change is under way); once more when the index switched models in between. No
 * embedder for that model: BM25 alone.
 */
async function searchWithActiveModel(ctx: AppContext, request: Omit<SearchRequest, 'vector' | 'vectorModel'>, signal?: AbortSignal): Promise<SearchHit[]> {
  for (let attempt = 1; ; attempt++) {
    // A client that already left costs no embedding either.
    if (signal?.aborted) throw new SearchAbandoned();
    const embedder = await activeEmbedder(ctx.searchIndex, ctx.embeddingModels);
    // The configured model's queries go through the query embedder (its cache).
    const queries = embedder && embedder.modelId === ctx.queryEmbeddings.modelId ? ctx.queryEmbeddings : embedder;
    // Remembered queries are kept per workspace (EmbeddingProvider.embedIn): a cache hit tells no other tenant what was asked.
    const texts = [request.text];
    const vector = queries ? (await (queries.embedIn ? queries.embedIn(request.filters.workspaceId, texts) : queries.embed(texts)))[0] : undefined;
    try {
      // The index's work in a turn shared fairly between workspaces (src/search/searchTurns.ts): one
      // tenant's flood of searches neither holds up another's nor runs for clients that left.
      return await searchTurns(ctx).run(
        request.filters.workspaceId,
        () => ctx.searchIndex.search({ ...request, ...(vector && queries ? { vector, vectorModel: queries.modelId } : {}) }),
        signal,
      );
    } catch (err) {
      if (!isVectorModelChanged(err) || attempt >= 2) throw err;
      forgetActiveModel(ctx.searchIndex);
    }
  }
}

const clamp01 = (x: number): number => (Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0);

/** VERIFIED documents of a workspace within a tag scope (empty scope: the whole workspace). */
export async function countDocumentsInScope(ctx: AppContext, workspaceId: string, allowedTags: string[]): Promise<number> {
  return documentsCollection(ctx.readStore).count({
    workspaceId,
    processingStatus: 'VERIFIED',
    ...(allowedTags.length ? { tags: { $containsAny: allowedTags } } : {}),
  });
}
