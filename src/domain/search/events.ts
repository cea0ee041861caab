import { DomainEvent } from '../event';
import { EventCatalog } from '../eventTraits';

/** Where a search came from: the workspace search (members), a public search link, or the tool endpoint (MCP). */
export type SearchChannel = 'workspace' | 'link' | 'tool';

/** At most this many hit document ids are kept per search (in rank order, distinct). */
export const MAX_HIT_DOCUMENTS = 20;

/**
 * One answered search, for analytics. Never the query text: that is kept outside the log,
 * only for links with history mode on, and deleted after 90 days (spec). Only counts,
 * latency, channel, result count and the ids of the documents hit.
 */
export type SearchPerformed = DomainEvent<
  'SearchPerformed',
  {
    searchId: string;
    workspaceId: string;
    channel: SearchChannel;
    /** The link searched through (link and tool channels); null for the workspace search. */
    linkId: string | null;
    latencyMs: number;
    resultCount: number;
    hitDocumentIds: string[];
  }
>;

/** Where a public link was used: the public HTTP search, the tool endpoint (MCP), or GET /s/<linkId>. */
export type LinkUseChannel = 'http' | 'mcp' | 's';

/**
 * One public use of a search link (any request that reached a live link: a search, a refusal
 * or error after the link was found, an MCP ping or tools/list), for the link's usage report.
 * Never the query text, the token, the client IP or the user agent: only the channel, whether
 * it was answered, and the latency.
 */
export type PublicLinkUsed = DomainEvent<
  'PublicLinkUsed',
  {
    useId: string;
    workspaceId: string;
    linkId: string;
    channel: LinkUseChannel;
    outcome: 'ok' | 'error';
    latencyMs: number;
  }
>;

export type SearchEvent = SearchPerformed | PublicLinkUsed;

/** Each search is its own one-event stream: nothing to load or decide, appends never contend. */
export const searchStream = (searchId: string): string => `search-${searchId}`;
/** Each public link use is its own one-event stream too. */
export const linkUseStream = (useId: string): string => `link-use-${useId}`;

/** Audit and encryption traits of search events (see EventTraits): telemetry, not audit-trail entries. */
export const searchEventTraits: EventCatalog<SearchEvent> = {
  SearchPerformed: { audit: ['channel', 'resultCount', 'latencyMs'], encrypted: [], trail: false },
  PublicLinkUsed: { audit: ['channel', 'outcome', 'latencyMs'], encrypted: [], trail: false },
};
