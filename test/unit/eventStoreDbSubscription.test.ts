import { EventEmitter } from 'node:events';
import { EventStoreDBClient } from '@eventstore/db-client';
import { EventStoreDbEventStore } from '../../src/adapters/eventstoredb/eventStoreDbEventStore';
import { RecordedEvent } from '../../src/domain/event';

/** The client calls the adapter makes, recorded; subscriptions are event emitters the test ends or closes. */
function recordingClient() {
  const subscriptions: (EventEmitter & { unsubscribe: () => Promise<void> })[] = [];
  const calls: string[] = [];
  const client = {
    subscribeToAll: () => {
      calls.push('subscribeToAll');
      const sub = Object.assign(new EventEmitter(), { unsubscribe: async () => undefined });
      subscriptions.push(sub);
      return sub;
    },
    readStream: () => {
      calls.push('readStream');
      return (async function* () {})();
    },
    appendToStream: async () => {
      calls.push('appendToStream');
      return { success: true, nextExpectedRevision: 3n, position: { commit: 10n, prepare: 10n } };
    },
    dispose: async () => undefined,
  };
  return { client: client as unknown as EventStoreDBClient, subscriptions, calls };
}

const event = (position: number): RecordedEvent => ({
  id: `e${position}`,
  type: 'T',
  streamId: 's',
  revision: position - 1,
  position,
  data: {},
  metadata: { actorId: null, authMethod: 'system', correlationId: 'c', occurredAt: '', schemaVersion: 1 },
});

async function until(probe: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (probe()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`never: ${what}`);
}

describe('EventStoreDbEventStore, at the level of the client calls', () => {
  it('re-opens the live subscription when it ends or closes, not only on error, and polls when it stays silent', async () => {
    const rec = recordingClient();
    const store = new EventStoreDbEventStore({ connectionString: 'esdb://unused', client: rec.client, resubscribeDelayMs: 5, pollIntervalMs: 50 });
    const log: RecordedEvent[] = [];
    store.readAll = async (after: number) => log.filter((e) => e.position > after);
    const seen: number[] = [];
    const sub = store.subscribe(0, async (batch) => {
      seen.push(...batch.map((e) => e.position));
    });
    try {
      await until(() => rec.subscriptions.length === 1, 'first subscription');
      rec.subscriptions[0].emit('end');
      await until(() => rec.subscriptions.length === 2, 'resubscribed after end');
      rec.subscriptions[1].emit('close');
      await until(() => rec.subscriptions.length === 3, 'resubscribed after close');
      // An error then a close of the same subscription re-open it once.
      rec.subscriptions[2].emit('error', new Error('dropped'));
      rec.subscriptions[2].emit('close');
      await until(() => rec.subscriptions.length === 4, 'resubscribed after error');
      await new Promise((r) => setTimeout(r, 30));
      expect(rec.subscriptions).toHaveLength(4);
      // The live subscription says nothing: the poll still delivers.
      log.push(event(1), event(2));
      await until(() => seen.length === 2, 'delivered by polling');
      expect(seen).toEqual([1, 2]);
    } finally {
      await sub.stop();
    }
  });

  it("an 'any' append goes straight to the server: the stream is not read first", async () => {
    const rec = recordingClient();
    const store = new EventStoreDbEventStore({ connectionString: 'esdb://unused', client: rec.client });
    const r = await store.append('s', [{ id: '00000000-0000-4000-8000-000000000001', type: 'T', data: {}, metadata: event(1).metadata }], 'any');
    expect(rec.calls).toEqual(['appendToStream']);
    expect(r.nextRevision).toBe(3);
  });
});
