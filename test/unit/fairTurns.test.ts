import { FairTurns, TurnAbandonedError, TurnQueueFullError } from '../../src/util/fairTurns';
import { deferred } from '../support/deferred';

/** A job that records its start and ends when told. */
function job(started: string[], name: string) {
  const gate = deferred();
  return { gate, fn: async () => (started.push(name), await gate.promise, name) };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('FairTurns: jobs take turns between owners', () => {
  it("one owner's many jobs hold another's for at most the job running when it asks", async () => {
    const turns = new FairTurns(1, 1, 10);
    const started: string[] = [];
    const a = [1, 2, 3].map((i) => job(started, `a${i}`));
    const b = job(started, 'b1');
    const done = [...a.map((j) => turns.run('A', j.fn)), turns.run('B', b.fn)];
    expect(started).toEqual(['a1']);
    expect(turns.load).toEqual({ running: 1, waiting: 3, owners: 2 });
    a[0].gate.resolve();
    await settle();
    expect(started).toEqual(['a1', 'b1']);
    b.gate.resolve();
    a[1].gate.resolve();
    a[2].gate.resolve();
    expect(await Promise.all(done)).toEqual(['a1', 'a2', 'a3', 'b1']);
    expect(started).toEqual(['a1', 'b1', 'a2', 'a3']);
    expect(turns.load).toEqual({ running: 0, waiting: 0, owners: 0 });
  });

  it('runs one job of an owner at a time, others in the free turns', async () => {
    const turns = new FairTurns(2, 1, 10);
    const started: string[] = [];
    const [a1, a2, b1] = [job(started, 'a1'), job(started, 'a2'), job(started, 'b1')];
    const done = [turns.run('A', a1.fn), turns.run('A', a2.fn), turns.run('B', b1.fn)];
    expect(started).toEqual(['a1', 'b1']);
    a1.gate.resolve();
    await settle();
    expect(started).toEqual(['a1', 'b1', 'a2']);
    a2.gate.resolve();
    b1.gate.resolve();
    await Promise.all(done);
  });

  it("refuses an owner's job past its queue at once, not another owner's", async () => {
    const turns = new FairTurns(1, 1, 2);
    const started: string[] = [];
    const running = job(started, 'a1');
    const jobs = [turns.run('A', running.fn), turns.run('A', async () => 'a2'), turns.run('A', async () => 'a3')];
    await expect(turns.run('A', async () => 'a4')).rejects.toBeInstanceOf(TurnQueueFullError);
    const b = turns.run('B', async () => 'b1');
    running.gate.resolve();
    expect(await Promise.all([...jobs, b])).toEqual(['a1', 'a2', 'a3', 'b1']);
  });

  it('gives up the place of a job whose signal aborts while it waits; a failing job frees its turn', async () => {
    const turns = new FairTurns(1, 1, 1);
    const started: string[] = [];
    const running = job(started, 'a1');
    const first = turns.run('A', running.fn);
    const left = new AbortController();
    const waiting = turns.run('A', async () => 'never', left.signal);
    left.abort();
    await expect(waiting).rejects.toBeInstanceOf(TurnAbandonedError);
    expect(turns.load.waiting).toBe(0);
    // Its place is free again.
    const next = turns.run('A', async () => {
      throw new Error('boom');
    });
    running.gate.resolve();
    await first;
    await expect(next).rejects.toThrow('boom');
    expect(await turns.run('A', async () => 'after')).toBe('after');
    expect(turns.load).toEqual({ running: 0, waiting: 0, owners: 0 });
  });
});
