import { submitRunner } from '../../web/src/submit';
import { deferred } from '../support/deferred';

/** The console's submit pattern (web/src/submit.ts, the core of web/src/useSubmit.ts): busy, error, and what a failure shows. */
describe('console: useSubmit', () => {
  function harness() {
    const log: string[] = [];
    let running = 0;
    let error: unknown = 'untouched';
    const run = submitRunner({
      busy: (d) => {
        running += d;
        log.push(`busy ${running}`);
      },
      error: (e) => {
        error = e;
        log.push(`error ${e instanceof Error ? e.message : String(e)}`);
      },
    });
    return { run, log, busy: () => running > 0, error: () => error };
  }

  it('clears the last error, is busy while the call runs, and not after it succeeded', async () => {
    const h = harness();
    const call = deferred();
    const done = h.run(() => call.promise);
    expect(h.busy()).toBe(true);
    expect(h.error()).toBeNull();
    call.resolve();
    await expect(done).resolves.toBe(true);
    expect(h.busy()).toBe(false);
    expect(h.error()).toBeNull();
    expect(h.log).toEqual(['error null', 'busy 1', 'busy 0']);
  });

  it('shows what failed and stops being busy; the returned promise does not reject', async () => {
    const h = harness();
    const failure = new Error('refused');
    await expect(h.run(() => Promise.reject(failure))).resolves.toBe(false);
    expect(h.error()).toBe(failure);
    expect(h.busy()).toBe(false);
  });

  it('an action that throws before awaiting is a failure like any other', async () => {
    const h = harness();
    await expect(
      h.run(() => {
        throw new Error('at once');
      }),
    ).resolves.toBe(false);
    expect((h.error() as Error).message).toBe('at once');
    expect(h.busy()).toBe(false);
  });

  it("shows what onError makes of a failure, which runs before the form stops being busy", async () => {
    const h = harness();
    const seen: unknown[] = [];
    await h.run(
      () => Promise.reject(new Error('EXPIRED')),
      (e) => {
        seen.push(e);
        h.log.push('onError');
        return new Error('This link has expired.');
      },
    );
    expect((seen[0] as Error).message).toBe('EXPIRED');
    expect((h.error() as Error).message).toBe('This link has expired.');
    expect(h.log).toEqual(['error null', 'busy 1', 'onError', 'error This link has expired.', 'busy 0']);
  });

  it('shows nothing when onError handles the failure another way (a second sign-in step)', async () => {
    const h = harness();
    let challenge: string | null = null;
    await expect(
      h.run(
        () => Promise.reject(Object.assign(new Error('second factor'), { code: 'MFA_REQUIRED' })),
        () => {
          challenge = 'c-1';
          return null;
        },
      ),
    ).resolves.toBe(false);
    expect(challenge).toBe('c-1');
    expect(h.error()).toBeNull();
  });

  it('a new run clears the error of the last one', async () => {
    const h = harness();
    await h.run(() => Promise.reject(new Error('first')));
    expect((h.error() as Error).message).toBe('first');
    const call = deferred();
    const second = h.run(() => call.promise);
    expect(h.error()).toBeNull();
    call.resolve();
    await second;
    expect(h.error()).toBeNull();
  });

  it('overlapping runs: busy until the last one ends, none is dropped', async () => {
    const h = harness();
    const a = deferred();
    const b = deferred();
    let ran = 0;
    const first = h.run(async () => {
      ran++;
      await a.promise;
    });
    const second = h.run(async () => {
      ran++;
      await b.promise;
    });
    expect(ran).toBe(2);
    a.resolve();
    await first;
    expect(h.busy()).toBe(true);
    b.reject(new Error('second failed'));
    await second;
    expect(h.busy()).toBe(false);
    expect((h.error() as Error).message).toBe('second failed');
  });
});
