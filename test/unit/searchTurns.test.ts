import { SearchAbandoned, SearchTurns } from '../../src/search/searchTurns';

/** A piece of work that ends when told to; `started` says whether it ran. */
function gated() {
  let release!: () => void;
  const done = new Promise<void>((r) => (release = r));
  const state = { started: false, release: () => release() };
  const work = async () => {
    state.started = true;
    await done;
    return 'ok';
  };
  return { state, work };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('SearchTurns', () => {
  it("another workspace's search runs before a flood of one workspace sent earlier", async () => {
    const turns = new SearchTurns(4, 1000);
    const order: string[] = [];
    const flood = Array.from({ length: 50 }, () => gated());
    const runs = flood.map((g, i) => turns.run('A', async () => {
      order.push(`A${i}`);
      return g.work();
    }));
    const other = gated();
    const mine = turns.run('B', async () => {
      order.push('B');
      return other.work();
    });
    await tick();
    // A holds its share (half the turns); B's search started at once beside it.
    expect(order).toEqual(['A0', 'A1', 'B']);
    expect(turns.load).toEqual({ running: 3, waiting: 48 });
    other.state.release();
    await expect(mine).resolves.toBe('ok');
    for (const g of flood) g.state.release();
    await Promise.all(runs);
    expect(order).toHaveLength(51);
    expect(turns.load).toEqual({ running: 0, waiting: 0 });
  });

  it('a waiting search whose client left never runs and frees its place; one aborted before asking is refused', async () => {
    const turns = new SearchTurns(2, 1000);
    const first = gated();
    const running = turns.run('A', first.work);
    const controller = new AbortController();
    const waiting = gated();
    const abandoned = turns.run('A', waiting.work, controller.signal);
    await tick();
    expect(turns.load).toEqual({ running: 1, waiting: 1 });
    controller.abort();
    await expect(abandoned).rejects.toBeInstanceOf(SearchAbandoned);
    expect(turns.load).toEqual({ running: 1, waiting: 0 });
    first.state.release();
    await running;
    expect(waiting.state.started).toBe(false);
    await expect(turns.run('A', async () => 'x', controller.signal)).rejects.toBeInstanceOf(SearchAbandoned);
  });

  it("past its bound of waiting searches a workspace is refused (503), and no other is", async () => {
    const turns = new SearchTurns(2, 2);
    const held = gated();
    const a = [turns.run('A', held.work), turns.run('A', held.work), turns.run('A', held.work)];
    await expect(turns.run('A', held.work)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { retryAfter: 1 } });
    const b = gated();
    const mine = turns.run('B', b.work);
    await tick();
    expect(b.state.started).toBe(true);
    b.state.release();
    held.state.release();
    await Promise.all([mine, ...a]);
  });

  it('a failing search gives its turn back', async () => {
    const turns = new SearchTurns(1, 10);
    await expect(turns.run('A', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(turns.run('A', async () => 'next')).resolves.toBe('next');
    expect(turns.load).toEqual({ running: 0, waiting: 0 });
  });
});
