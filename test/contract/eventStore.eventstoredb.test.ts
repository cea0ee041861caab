import { randomUUID } from 'node:crypto';
import { EventStoreDbEventStore } from '../../src/adapters/eventstoredb/eventStoreDbEventStore';
import { eventStoreContract } from './eventStore.contract';

const url = process.env.KB_TEST_EVENTSTOREDB_URL;

if (url) {
  // A random stream prefix per store isolates each test on the shared server.
  eventStoreContract('EventStoreDbEventStore', async () => new EventStoreDbEventStore({ connectionString: url, streamPrefix: `t${randomUUID().slice(0, 8)}-`, pageSize: 200 }));
} else {
  describe.skip('EventStore contract: EventStoreDbEventStore (skipped: set KB_TEST_EVENTSTOREDB_URL, e.g. esdb://localhost:2113?tls=false)', () => {
    it('needs a server', () => undefined);
  });
}
