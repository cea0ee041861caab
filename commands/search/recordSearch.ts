import { randomUUID } from 'node:crypto';
import { CommandContext, toNewEvents } from '../../src/core/commandHandler';
import { EventStore } from '../../src/ports/eventStore';
import { MAX_HIT_DOCUMENTS, SearchChannel, SearchPerformed, searchStream } from '../../src/domain/search/events';
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
  if (inFlight >= ports.config.searchEventBacklog) {
    dropped += 1;
    if (dropped === 1 || dropped % 1000 === 0) ports.logger.warn({ dropped }, 'search events dropped: too many being written');
    return;
  }
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
  const ctx: CommandContext = { actorId: s.actorId, authMethod: s.authMethod, correlationId: s.correlationId, now: ports.now(), workspaceId: s.workspaceId };
  inFlight += 1;
  ports.eventStore
    .append(searchStream(searchId), toNewEvents([event], ctx), 'no_stream')
    .catch((err: unknown) => ports.logger.warn({ errName: err instanceof Error ? err.name : 'unknown' }, 'recording a search event failed'))
    .finally(() => {
      inFlight -= 1;
    });
}

/** Searches whose event is being written (for tests and shutdown). */
export const searchEventsInFlight = (): number => inFlight;
