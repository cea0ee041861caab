import { Warmup } from '../../src/app/warmup';
import { deferred } from '../support/deferred';

describe('Warmup (what /readyz reports)', () => {
  it('is warming until every part added is done, then ready', async () => {
    const model = deferred();
    const processing = deferred();
    const w = new Warmup(() => model.promise);
    w.add('document processing', () => processing.promise);
    expect(w.state).toBe('warming');
    model.resolve();
    await model.promise;
    await new Promise((r) => setImmediate(r));
    expect(w.state).toBe('warming');
    processing.resolve();
    await w.done;
    expect(w.state).toBe('ready');
    expect(w.ms).toBeGreaterThanOrEqual(0);
  });

  it('reports the first failure, and stays failed when other parts end well', async () => {
    const w = new Warmup(async () => {
      throw new Error('model file missing');
    });
    w.add('document processing', async () => undefined);
    await w.done;
    expect(w.state).toBe('failed');
    expect(w.error).toBe('model file missing');
  });
});
