import { EventStoreDBClient, WrongExpectedVersionError } from '@eventstore/db-client';
import { EventStoreDbEventStore } from '../../src/adapters/eventstoredb/eventStoreDbEventStore';
import { WrongExpectedRevisionError } from '../../src/ports/eventStore';
import { NewEvent } from '../../src/domain/event';

const metadata = { actorId: null, authMethod: 'system' as const, correlationId: 'c', occurredAt: '', schemaVersion: 1 };
const event = (n: number): NewEvent => ({ id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, type: 'T', data: {}, metadata });

/** A client whose appends wait until the test releases them, one outcome per call. */
function gatedClient(outcomes: ('ok' | 'wrong-version' | 'down')[]) {
  const waiting: (() => void)[] = [];
  let call = 0;
  const client = {
    appendToStream: async (streamName: string) => {
      const outcome = outcomes[call++];
      await new Promise<void>((resolve) => waiting.push(resolve));
      if (outcome === 'wrong-version') throw new WrongExpectedVersionError(undefined, { streamName, expected: 0n, current: 4n });
      if (outcome === 'down') throw new Error('connection refused');
      return { success: true, nextExpectedRevision: 0n, position: { commit: BigInt(call), prepare: BigInt(call) } };
    },
    readStream: () => (async function* () {})(),
    dispose: async () => undefined,
  };
  return { client: client as unknown as EventStoreDBClient, release: () => waiting.splice(0).forEach((r) => r()), waiting: () => waiting.length };
}

describe('EventStoreDbEventStore metrics', () => {
  it('records how many appends were in flight together, and the latency of every append the server answered', async () => {
    const inFlight: number[] = [];
    const latencies: number[] = [];
    const gate = gatedClient(['ok', 'ok', 'wrong-version', 'down', 'ok']);
    const store = new EventStoreDbEventStore({ connectionString: 'esdb://unused', client: gate.client, metrics: { appendsInFlight: (n) => inFlight.push(n), eventStoreAppend: (s) => latencies.push(s) } });
    const appends = [
      store.append('a', [event(1)], 'any'),
      store.append('b', [event(2)], 'any'),
      store.append('c', [event(3)], 0),
      store.append('d', [event(4)], 'any'),
    ].map((p) => p.then(() => 'ok', (e: unknown) => (e instanceof WrongExpectedRevisionError ? 'wrong-version' : 'down')));
    for (let i = 0; i < 100 && gate.waiting() < 4; i++) await new Promise((r) => setImmediate(r));
    expect(gate.waiting()).toBe(4);
    expect(inFlight).toEqual([1, 2, 3, 4]);
    expect(latencies).toEqual([]);
    gate.release();
    expect(await Promise.all(appends)).toEqual(['ok', 'ok', 'wrong-version', 'down']);
    // Answered: two acknowledged, one refused for its revision; the failed connection is not a latency.
    expect(latencies).toHaveLength(3);
    for (const s of latencies) expect(s).toBeGreaterThanOrEqual(0);
    // In flight goes back down: the next append is alone.
    const next = store.append('e', [event(5)], 'any');
    for (let i = 0; i < 100 && gate.waiting() < 1; i++) await new Promise((r) => setImmediate(r));
    gate.release();
    await next;
    expect(inFlight).toEqual([1, 2, 3, 4, 1]);
    expect(latencies).toHaveLength(4);
  });
});
