import { randomUUID } from 'node:crypto';
import { InProcessJobQueue } from '../../src/adapters/inprocess/inProcessJobQueue';
import { FairScheduler, SchedulerClosedError } from '../../src/processing/fairScheduler';

/** A task that runs until released; records its start in `log`. */
function gated(log: string[], name: string): { task: () => Promise<string>; release: () => void } {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  return {
    task: async () => {
      log.push(name);
      await gate;
      return name;
    },
    release: () => release(),
  };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('FairScheduler', () => {
  it('takes waiting tasks round-robin across groups, not first come', async () => {
    const s = new FairScheduler({ concurrency: 1, perGroup: 1 });
    const log: string[] = [];
    const tasks = ['P1', 'P2', 'P3', 'Q1', 'R1', 'Q2'].map((n) => ({ n, ...gated(log, n) }));
    const done = tasks.map((t) => s.submit(t.n[0], t.task));
    for (const t of tasks) {
      await tick();
      t.release(); // no effect until started; releasing ahead lets each run to completion
    }
    await Promise.all(done);
    expect(log).toEqual(['P1', 'Q1', 'R1', 'P2', 'Q2', 'P3']);
  });

  it('never runs more than perGroup of one group, and keeps the other slots for other groups', async () => {
    const s = new FairScheduler({ concurrency: 3, perGroup: 1 });
    const log: string[] = [];
    const p = [gated(log, 'P1'), gated(log, 'P2'), gated(log, 'P3')];
    const done = p.map((t) => s.submit('P', t.task));
    await tick();
    expect(log).toEqual(['P1']);
    expect(s.runningCount('P')).toBe(1);
    expect(s.waitingCount).toBe(2);
    const q = gated(log, 'Q1');
    const qDone = s.submit('Q', q.task);
    await tick();
    expect(log).toEqual(['P1', 'Q1']); // Q does not wait behind P's queue
    q.release();
    expect(await qDone).toBe('Q1');
    p[0].release();
    await tick();
    await tick();
    expect(log).toEqual(['P1', 'Q1', 'P2']);
    p[1].release();
    p[2].release();
    expect(await Promise.all(done)).toEqual(['P1', 'P2', 'P3']);
    await s.idle();
    expect(s.runningCount()).toBe(0);
  });

  it('uses every slot for one group up to perGroup', async () => {
    const s = new FairScheduler({ concurrency: 4, perGroup: 2 });
    const log: string[] = [];
    const tasks = ['a', 'b', 'c'].map((n) => gated(log, n));
    const done = tasks.map((t) => s.submit('P', t.task));
    await tick();
    expect(log).toEqual(['a', 'b']);
    tasks.forEach((t) => t.release());
    await Promise.all(done);
    expect(log).toEqual(['a', 'b', 'c']);
  });

  it('a failing task frees its slot and rejects its caller only', async () => {
    const s = new FairScheduler({ concurrency: 1, perGroup: 1 });
    const failed = s.submit('P', async () => Promise.reject(new Error('boom')));
    const next = s.submit('P', async () => 'ok');
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe('ok');
  });

  it('close() rejects waiting tasks and lets running ones finish', async () => {
    const s = new FairScheduler({ concurrency: 1, perGroup: 1 });
    const log: string[] = [];
    const a = gated(log, 'a');
    const running = s.submit('P', a.task);
    const waiting = s.submit('Q', async () => 'never');
    await tick();
    s.close();
    await expect(waiting).rejects.toBeInstanceOf(SchedulerClosedError);
    await expect(s.submit('R', async () => 'late')).rejects.toBeInstanceOf(SchedulerClosedError);
    a.release();
    await expect(running).resolves.toBe('a');
    await s.idle();
  });
});

describe('InProcessJobQueue fairness', () => {
  it('serves groups round-robin and caps one group per consumer', async () => {
    const queue = new InProcessJobQueue();
    const started: string[] = [];
    const gates = new Map<string, () => void>();
    const job = (group: string, name: string) => ({ id: randomUUID(), type: 'T', payload: { name }, group });
    for (const [g, n] of [['P', 'P1'], ['P', 'P2'], ['P', 'P3'], ['Q', 'Q1'], ['Q', 'Q2']]) await queue.enqueue(job(g, n));
    const consumer = await queue.consume(
      async (j) => {
        const name = j.payload.name as string;
        started.push(name);
        await new Promise<void>((r) => gates.set(name, r));
      },
      { concurrency: 2, maxPerGroup: 1 },
    );
    await tick();
    expect(started).toEqual(['P1', 'Q1']); // one of each group, though P's were first
    gates.get('P1')!();
    await tick();
    await tick();
    expect(started).toEqual(['P1', 'Q1', 'P2']); // P2, not Q2: Q already has its one
    gates.get('Q1')!();
    await tick();
    await tick();
    expect(started).toEqual(['P1', 'Q1', 'P2', 'Q2']);
    for (const n of ['P2', 'Q2']) gates.get(n)!();
    await tick();
    await tick();
    gates.get('P3')!();
    await consumer.stop();
    expect(started).toEqual(['P1', 'Q1', 'P2', 'Q2', 'P3']);
  });
});
