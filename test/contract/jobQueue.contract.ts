import { randomUUID } from 'node:crypto';
import { Job, JobQueue } from '../../src/ports/jobQueue';

/** Resolves when `predicate` holds, re-checked on every `poke()` (no timers). */
function condition(): { poke: () => void; until: (predicate: () => boolean) => Promise<void> } {
  const waiters: { predicate: () => boolean; resolve: () => void }[] = [];
  return {
    poke: () => {
      for (const w of [...waiters]) {
        if (w.predicate()) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      }
    },
    until: (predicate) => (predicate() ? Promise.resolve() : new Promise((resolve) => waiters.push({ predicate, resolve }))),
  };
}

/**
 * The contract every JobQueue adapter passes. `make` returns a fresh, empty queue (for a
 * broker: its own topics and consumer group).
 */
export function jobQueueContract(name: string, make: () => Promise<JobQueue>): void {
  describe(`JobQueue contract: ${name}`, () => {
    let queue: JobQueue;
    beforeEach(async () => {
      queue = await make();
    });
    afterEach(async () => {
      await queue.close();
    });
    const job = (type = 'ProcessDocument', payload: Record<string, unknown> = {}): Job => ({ id: randomUUID(), type, payload: { documentId: randomUUID(), ...payload } });
    const noDelay = { retryDelayMs: () => 0 };

    it('delivers jobs enqueued before and after consuming starts, with their payload', async () => {
      const seen: Job[] = [];
      const c = condition();
      const early = job('A', { n: 1 });
      await queue.enqueue(early);
      const consumer = await queue.consume(async (j) => {
        seen.push(j);
        c.poke();
      }, noDelay);
      const late = job('B', { n: 2, nested: { ok: true } });
      await queue.enqueue(late);
      await c.until(() => seen.length >= 2);
      await consumer.stop();
      expect(seen).toEqual([early, late]);
    });

    it('handles a job id once even when it is enqueued twice', async () => {
      const seen: string[] = [];
      const c = condition();
      const dup = job();
      const marker = job('Marker');
      await queue.enqueue(dup);
      await queue.enqueue(dup);
      await queue.enqueue(marker);
      const consumer = await queue.consume(async (j) => {
        seen.push(j.id);
        c.poke();
      }, noDelay);
      await c.until(() => seen.includes(marker.id));
      await consumer.stop();
      expect(seen.filter((id) => id === dup.id)).toHaveLength(1);
    });

    it('retries a failing job until it succeeds', async () => {
      const attempts = new Map<string, number>();
      const done: string[] = [];
      const c = condition();
      const flaky = job('Flaky');
      const consumer = await queue.consume(
        async (j) => {
          const n = (attempts.get(j.id) ?? 0) + 1;
          attempts.set(j.id, n);
          if (n < 3) throw new Error(`transient failure ${n}`);
          done.push(j.id);
          c.poke();
        },
        { ...noDelay, maxAttempts: 3 },
      );
      await queue.enqueue(flaky);
      await c.until(() => done.includes(flaky.id));
      await consumer.stop();
      expect(attempts.get(flaky.id)).toBe(3);
      expect(done).toEqual([flaky.id]);
    });

    it('dead-letters a job that fails every attempt and goes on with the next', async () => {
      const attempts = new Map<string, number>();
      const dead: { job: Job; error: unknown }[] = [];
      const done: string[] = [];
      const c = condition();
      const poison = job('Poison');
      const fine = job('Fine');
      const consumer = await queue.consume(
        async (j) => {
          attempts.set(j.id, (attempts.get(j.id) ?? 0) + 1);
          if (j.type === 'Poison') throw new Error('cannot process');
          done.push(j.id);
          c.poke();
        },
        {
          ...noDelay,
          maxAttempts: 2,
          onDeadLetter: (j, error) => {
            dead.push({ job: j, error });
            c.poke();
          },
        },
      );
      await queue.enqueue(poison);
      await queue.enqueue(fine);
      await c.until(() => dead.length === 1 && done.includes(fine.id));
      await consumer.stop();
      expect(dead[0].job).toEqual(poison);
      expect((dead[0].error as Error).message).toBe('cannot process');
      expect(attempts.get(poison.id)).toBe(2);
      expect(attempts.get(fine.id)).toBe(1);
    });

    it('stops taking jobs after stop(); a later consumer gets them', async () => {
      const first: string[] = [];
      const second: string[] = [];
      const c = condition();
      const a = job('A');
      const b = job('B');
      const consumer = await queue.consume(async (j) => {
        first.push(j.id);
        c.poke();
      }, noDelay);
      await queue.enqueue(a);
      await c.until(() => first.includes(a.id));
      await consumer.stop();
      await queue.enqueue(b);
      const next = await queue.consume(async (j) => {
        second.push(j.id);
        c.poke();
      }, noDelay);
      await c.until(() => second.includes(b.id));
      await next.stop();
      expect(first).toEqual([a.id]);
      expect(second).toEqual([b.id]);
    });
  });
}
