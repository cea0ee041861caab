import { DomainError } from '../../src/domain/errors';
import { SearchLinkView } from '../../projections/searchLink/searchLinkProjection';
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
  const hits = await searchWorkspace(deps, { workspaceId: link.workspaceId, query: s.query, limit: s.limit, ...(tags ? { tags } : {}) });
  return hits.map((h) => ({
    documentId: h.documentId,
    title: h.documentTitle,
    content: h.content,
    score: h.score,
    tags: scoped ? h.tags.filter((x) => link.allowedTags.includes(x)) : h.tags,
  }));
}
