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

export type SearchEvent = SearchPerformed;

/** Each search is its own one-event stream: nothing to load or decide, appends never contend. */
export const searchStream = (searchId: string): string => `search-${searchId}`;

/** Audit and encryption traits of search events (see EventTraits): telemetry, not audit-trail entries. */
export const searchEventTraits: EventCatalog<SearchEvent> = {
  SearchPerformed: { audit: ['channel', 'resultCount', 'latencyMs'], encrypted: [], trail: false },
};
