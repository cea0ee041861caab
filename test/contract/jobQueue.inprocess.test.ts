import { randomUUID } from 'node:crypto';
import { InProcessJobQueue } from '../../src/adapters/inprocess/inProcessJobQueue';
import { jobQueueContract } from './jobQueue.contract';

jobQueueContract('InProcessJobQueue', async () => new InProcessJobQueue());

describe('InProcessJobQueue specifics', () => {
  const job = (type = 'T') => ({ id: randomUUID(), type, payload: {} });

  it('keeps dead letters with their attempt count', async () => {
    const queue = new InProcessJobQueue();
    let resolve!: () => void;
    const dead = new Promise<void>((r) => (resolve = r));
    const consumer = await queue.consume(async () => Promise.reject(new Error('nope')), { maxAttempts: 3, retryDelayMs: () => 0, onDeadLetter: () => resolve() });
    const j = job();
    await queue.enqueue(j);
    await dead;
    await consumer.stop();
    expect(queue.deadLetters()).toEqual([{ job: j, error: new Error('nope'), attempts: 3 }]);
  });

  it('ignores a job id that was already handled', async () => {
    const queue = new InProcessJobQueue();
    const seen: string[] = [];
    let wake: (() => void) | null = null;
    const consumer = await queue.consume(async (x) => {
      seen.push(x.id);
      wake?.();
    });
    const j = job();
    const marker = job();
    await new Promise<void>((r) => {
      wake = r;
      void queue.enqueue(j);
    });
    await queue.enqueue(j);
    await new Promise<void>((r) => {
      wake = r;
      void queue.enqueue(marker);
    });
    await consumer.stop();
    expect(seen).toEqual([j.id, marker.id]);
  });

  it('runs jobs concurrently up to the limit and stops every idle worker', async () => {
    const queue = new InProcessJobQueue();
    let running = 0;
    let peak = 0;
    const release: (() => void)[] = [];
    let started!: () => void;
    const startedTwo = new Promise<void>((r) => (started = r));
    const consumer = await queue.consume(
      async () => {
        running++;
        peak = Math.max(peak, running);
        if (running === 2) started();
        await new Promise<void>((r) => release.push(r));
        running--;
      },
      { concurrency: 2 },
    );
    for (let i = 0; i < 3; i++) await queue.enqueue(job());
    await startedTwo;
    expect(peak).toBe(2);
    expect(release).toHaveLength(2); // the third waits for a free worker
    release.splice(0).forEach((r) => r());
    await new Promise((r) => setImmediate(r));
    release.splice(0).forEach((r) => r());
    await consumer.stop();
    expect(running).toBe(0);
    expect(peak).toBe(2);
  });
});
