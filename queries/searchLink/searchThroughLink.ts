import { DomainError } from '../../src/domain/errors';
import { SearchLinkView } from '../../projections/searchLink/searchLinkProjection';
import { documentsCollection, documentTextsCollection } from '../../projections/document/documentProjection';
import { searchWorkspace } from '../search/searchService';

/** What searching through a link needs: the workspace search's dependencies. */
export type LinkSearchDeps = Parameters<typeof searchWorkspace>[0];

/** The part of a link that decides what it can reach. */
export type LinkScope = Pick<SearchLinkView, 'workspaceId' | 'allowedTags'>;

export interface LinkSearch {
  query: string;
  limit: number;
  /** Tag ids asked for (undefined: the link's whole scope). */
  tags?: string[];
  /** Aborted when the client left (see WorkspaceSearch.signal). */
  signal?: AbortSignal;
}

export interface LinkSearchHit {
  documentId: string;
  title: string;
  content: string;
  score: number;
  /** The document's tags, cut to the link's scope when the link has one. */
  tags: string[];
}

/**
 * Search inside a link's scope: the one rule behind the public search and the tool endpoint.
 * A link with allowedTags reaches only documents having one of them; requested tags must be
 * among them (TAG_NOT_ALLOWED otherwise), and the tags shown on a hit are cut to the scope,
 * so nothing outside the scope is revealed.
 */
export async function searchThroughLink(deps: LinkSearchDeps, link: LinkScope, s: LinkSearch): Promise<LinkSearchHit[]> {
  const scoped = link.allowedTags.length > 0;
  if (s.tags && scoped) {
    const refused = s.tags.filter((x) => !link.allowedTags.includes(x));
    if (refused.length) throw new DomainError('TAG_NOT_ALLOWED', `These tags are outside this link's scope: ${refused.slice(0, 10).join(', ')}.`);
  }
  const tags = s.tags ?? (scoped ? link.allowedTags : undefined);
  const hits = await searchWorkspace(deps, { workspaceId: link.workspaceId, query: s.query, limit: s.limit, ...(tags ? { tags } : {}), ...(s.signal ? { signal: s.signal } : {}) });
  return hits.map((h) => ({
    documentId: h.documentId,
    title: h.documentTitle,
    content: h.content,
    score: h.score,
    tags: scoped ? h.tags.filter((x) => link.allowedTags.includes(x)) : h.tags,
  }));
}

/**
 * Hits found under a link's scope as that link is now: a search waits for its turn, and the link
 * may have been narrowed meanwhile (PATCH allowedTags). Hits outside the scope now are dropped,
 * their tags cut to it. A link without allowedTags keeps every hit.
 */
export function cutToScope(hits: LinkSearchHit[], now: LinkScope): LinkSearchHit[] {
  if (now.allowedTags.length === 0) return hits;
  const allowed = new Set(now.allowedTags);
  return hits.filter((h) => h.tags.some((t) => allowed.has(t))).map((h) => ({ ...h, tags: h.tags.filter((t) => allowed.has(t)) }));
}

export interface LinkDocument {
  documentId: string;
  title: string;
  /** The document's latest extracted text, cut to `maxChars` code points. */
  text: string;
  truncated: boolean;
  mimeType: string;
  updatedAt: string;
  /** The document's tags, cut to the link's scope when the link has one. */
  tags: string[];
}

/**
 * One whole document through a link (the `fetch` tool): only a VERIFIED document of the
 * link's workspace, and, for a link with allowedTags, only one having one of them. Anything
 * else (another workspace, outside the scope, not VERIFIED, deleted, not an id) is
 * DOCUMENT_NOT_FOUND, so a link reveals nothing beyond what its search can reach.
 */
export async function fetchThroughLink(deps: LinkSearchDeps, link: LinkScope, documentId: string, maxChars: number): Promise<LinkDocument> {
  const notFound = () => new DomainError('DOCUMENT_NOT_FOUND', 'Document not found.');
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(documentId)) throw notFound();
  const d = await documentsCollection(deps.readStore).get(documentId);
  if (!d || d.workspaceId !== link.workspaceId || d.processingStatus !== 'VERIFIED') throw notFound();
  const scoped = link.allowedTags.length > 0;
  if (scoped && !d.tags.some((t) => link.allowedTags.includes(t))) throw notFound();
  // VERIFIED means searchable: the same bounded wait as every reader of VERIFIED documents.
  await deps.runner.waitFor(d.verifiedPosition ?? 0, deps.config.readYourWritesMs);
  const stored = await documentTextsCollection(deps.readStore).get(documentId);
  if (!stored || stored.workspaceId !== link.workspaceId) throw notFound();
  const cut = codePointPrefix(stored.text, maxChars);
  const truncated = cut.length < stored.text.length;
  return {
    documentId,
    title: d.title,
    text: cut,
    truncated,
    mimeType: d.mimeType,
    updatedAt: d.updatedAt,
    tags: scoped ? d.tags.filter((t) => link.allowedTags.includes(t)) : d.tags,
  };
}

/** The first `max` code points of `s` (without copying the rest). */
function codePointPrefix(s: string, max: number): string {
  if (s.length <= max) return s;
  let count = 0;
  let i = 0;
  while (i < s.length && count < max) {
    const c = s.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length ? 2 : 1;
    count += 1;
  }
  return s.slice(0, i);
}
