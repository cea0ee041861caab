import { randomUUID } from 'node:crypto';
import { CommandContext, toNewEvents } from '../../src/core/commandHandler';
import { EventStore } from '../../src/ports/eventStore';
import { LinkUseChannel, linkUseStream, MAX_HIT_DOCUMENTS, PublicLinkUsed, SearchChannel, SearchEvent, SearchPerformed, searchStream } from '../../src/domain/search/events';
import { AuthMethod } from '../../src/domain/event';

export interface RecordSearchPorts {
  eventStore: EventStore;
  logger: { warn(obj: object, msg: string): void };
  config: { searchEventBacklog: number };
  now: () => Date;
}

export interface AnsweredSearch {
  workspaceId: string;
  channel: SearchChannel;
  linkId: string | null;
  actorId: string | null;
  authMethod: AuthMethod;
  correlationId: string;
  latencyMs: number;
  /** Hits in rank order (their document ids; repeated documents are counted once). */
  hitDocumentIds: string[];
}

let inFlight = 0;
let dropped = 0;

/**
 * Append a SearchPerformed event for an answered search, without making the search wait:
 * the append is the normal durable one, but nobody waits for it or for read-your-writes.
 * A search is its own stream, so there is nothing to load or decide and appends never
 * conflict (the command handler's load/decide/retry loop would only add a read). At most
 * `searchEventBacklog` appends are in flight; past it the event is dropped and counted.
 * The query text is never passed here.
 */
export function recordSearch(ports: RecordSearchPorts, s: AnsweredSearch): void {
  const searchId = randomUUID();
  const event: SearchPerformed = {
    type: 'SearchPerformed',
    data: {
      searchId,
      workspaceId: s.workspaceId,
      channel: s.channel,
      linkId: s.linkId,
      latencyMs: Math.round(s.latencyMs * 100) / 100,
      resultCount: s.hitDocumentIds.length,
      hitDocumentIds: [...new Set(s.hitDocumentIds)].slice(0, MAX_HIT_DOCUMENTS),
    },
  };
  append(ports, searchStream(searchId), event, { actorId: s.actorId, authMethod: s.authMethod, correlationId: s.correlationId, now: ports.now(), workspaceId: s.workspaceId });
}

export interface LinkUse {
  workspaceId: string;
  linkId: string;
  channel: LinkUseChannel;
  ok: boolean;
  latencyMs: number;
  correlationId: string;
}

/**
 * Append a PublicLinkUsed event for one public use of a link (the link's usage report is
 * derived from these), the same way as a search: not awaited, bounded by the same backlog.
 * No query text, token, IP or user agent is passed here.
 */
export function recordLinkUsed(ports: RecordSearchPorts, u: LinkUse): void {
  const useId = randomUUID();
  const event: PublicLinkUsed = {
    type: 'PublicLinkUsed',
    data: { useId, workspaceId: u.workspaceId, linkId: u.linkId, channel: u.channel, outcome: u.ok ? 'ok' : 'error', latencyMs: Math.round(u.latencyMs * 100) / 100 },
  };
  append(ports, linkUseStream(useId), event, { actorId: null, authMethod: 'public_token', correlationId: u.correlationId, now: ports.now(), workspaceId: u.workspaceId });
}

function append(ports: RecordSearchPorts, stream: string, event: SearchEvent, ctx: CommandContext): void {
  if (inFlight >= ports.config.searchEventBacklog) {
    dropped += 1;
    if (dropped === 1 || dropped % 1000 === 0) ports.logger.warn({ dropped }, 'search events dropped: too many being written');
    return;
  }
  inFlight += 1;
  ports.eventStore
    .append(stream, toNewEvents([event], ctx), 'no_stream')
    .catch((err: unknown) => ports.logger.warn({ errName: err instanceof Error ? err.name : 'unknown' }, 'recording a search event failed'))
    .finally(() => {
      inFlight -= 1;
    });
}

/** Searches whose event is being written (for tests and shutdown). */
export const searchEventsInFlight = (): number => inFlight;
