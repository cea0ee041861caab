import { PacedLogVerifier, WALK_GAP_FACTOR, WALK_GAP_MAX_MS } from '../../src/audit/verifyLog';
import { LogVerification, LogVerifier } from '../../src/ports/logVerifier';

/**
 * The log verification's walks are paced: after a walk the next starts no sooner than
 * WALK_GAP_FACTOR times its duration later, and the requests waiting by then share it. A
 * simulated clock: the walks' durations and the waits are numbers, nothing is timed.
 */
describe('PacedLogVerifier', () => {
  let now = 0;
  const sleeps: number[] = [];
  /** Pending sleeps, resolved by advancing the clock. */
  let pendingSleep: { until: number; resolve: () => void }[] = [];
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      sleeps.push(ms);
      pendingSleep.push({ until: now + ms, resolve });
    });
  const advance = async (ms: number) => {
    now += ms;
    const due = pendingSleep.filter((s) => s.until <= now);
    pendingSleep = pendingSleep.filter((s) => s.until > now);
    for (const s of due) s.resolve();
    for (let i = 0; i < 10; i++) await Promise.resolve();
  };

  /** A verifier whose walk lasts `walkMs` of the simulated clock and is shared by concurrent callers, as the SQLite one's. */
  function fakeInner(walkMs: () => number) {
    let running: Promise<void> | null = null;
    let finish: (() => void) | null = null;
    const walks: number[] = [];
    const inner: LogVerifier = {
      async verify(workspaceId: string): Promise<LogVerification> {
        if (!running) {
          walks.push(now);
          running = new Promise<void>((resolve) => (finish = resolve)).finally(() => {
            running = null;
          });
        }
        await running;
        return { ok: true, checked: 1, workspaceEvents: workspaceId.length, headPosition: 1, firstBreak: null, startedAt: '', finishedAt: '' };
      },
    };
    return { inner, walks, end: async () => {
      now += walkMs();
      finish?.();
      for (let i = 0; i < 10; i++) await Promise.resolve();
    } };
  }

  beforeEach(() => {
    now = 0;
    sleeps.length = 0;
    pendingSleep = [];
  });

  it('starts the first walk at once, the next after the gap, and the requests waiting by then share one walk', async () => {
    const f = fakeInner(() => 100);
    const v = new PacedLogVerifier(f.inner, () => now, sleep);
    const first = v.verify('a');
    await advance(0);
    expect(f.walks).toEqual([0]);
    // A request during the walk joins it.
    const joining = v.verify('bb');
    await advance(0);
    await f.end();
    expect((await first).workspaceEvents).toBe(1);
    expect((await joining).workspaceEvents).toBe(2);
    expect(f.walks).toEqual([0]);

    // Right after: three requests wait for the gap (9 × 100 ms) and share the next walk.
    const waiting = [v.verify('a'), v.verify('bb'), v.verify('ccc')];
    await advance(0);
    expect(f.walks).toEqual([0]);
    expect(sleeps).toEqual([WALK_GAP_FACTOR * 100]);
    await advance(WALK_GAP_FACTOR * 100 - 1);
    expect(f.walks).toEqual([0]);
    await advance(1);
    expect(f.walks).toEqual([0, 100 + WALK_GAP_FACTOR * 100]);
    await f.end();
    expect((await Promise.all(waiting)).map((r) => r.workspaceEvents)).toEqual([1, 2, 3]);
    expect(f.walks.length).toBe(2);
  });

  it('waits only what is left of the gap, and never longer than the cap', async () => {
    let walk = 100;
    const f = fakeInner(() => walk);
    const v = new PacedLogVerifier(f.inner, () => now, sleep);
    const a = v.verify('a');
    await advance(0);
    await f.end();
    await a;
    // 500 ms after the walk ended, 400 ms of its 900 ms gap are left.
    await advance(500);
    const b = v.verify('a');
    await advance(0);
    expect(sleeps).toEqual([WALK_GAP_FACTOR * 100 - 500]);
    await advance(WALK_GAP_FACTOR * 100 - 500);
    walk = 60_000;
    await f.end();
    await b;
    // A walk of a minute: the gap after it is the cap, not nine minutes.
    const c = v.verify('a');
    await advance(0);
    expect(sleeps[1]).toBe(WALK_GAP_MAX_MS);
    await advance(WALK_GAP_MAX_MS);
    walk = 1;
    await f.end();
    await c;
    expect(f.walks.length).toBe(3);
  });
});
