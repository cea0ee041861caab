import type { MongoClient } from 'mongodb';
import { AppContext } from './context';
import { EventStore } from '../ports/eventStore';
import { EventFeed } from '../ports/eventFeed';
import { JobQueue } from '../ports/jobQueue';

/**
 * What the composition root opened besides the ports in AppContext: the job queue and
 * event feed (KB_FEED=kafka), the shared MongoClient (KB_READ_STORE=mongodb), and the event
 * store under the encryption decorator (what the feed publishes). Kept beside the context
 * (not in it) so the HTTP layer never sees them; closeContext releases them.
 */
export interface Infrastructure {
  /** The event store as stored (document text sealed). */
  storedEventStore: EventStore;
  jobQueue?: JobQueue;
  eventFeed?: EventFeed;
  mongoClient?: MongoClient;
  /** Extra resources to release on close, in order (after the ports). */
  closers: (() => Promise<unknown>)[];
}

const byContext = new WeakMap<object, Infrastructure>();

export function attachInfrastructure(ctx: object, infra: Infrastructure): void {
  byContext.set(ctx, infra);
}

export function infrastructureOf(ctx: AppContext): Infrastructure | undefined {
  return byContext.get(ctx);
}
