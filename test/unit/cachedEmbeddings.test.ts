import { CachedEmbeddings } from '../../src/adapters/embeddings/cachedEmbeddings';
import type { EmbeddingProvider } from '../../src/ports/embeddings';

function counting(modelId = 'fake:1'): EmbeddingProvider & { calls: string[][] } {
  const calls: string[][] = [];
  return {
    modelId,
    dimensions: 1,
    calls,
    async embed(texts: string[]) {
      calls.push([...texts]);
      return texts.map((t) => Float32Array.of(t.length));
    },
    async close() {},
  };
}

describe('CachedEmbeddings', () => {
  it('serves repeated texts from the cache and embeds only the misses', async () => {
    const inner = counting();
    const c = new CachedEmbeddings(inner, { maxEntries: 10 });
    expect((await c.embed(['a', 'bb'])).map((v) => v[0])).toEqual([1, 2]);
    expect((await c.embed(['bb', 'ccc', 'a', 'ccc'])).map((v) => v[0])).toEqual([2, 3, 1, 3]);
    expect(inner.calls).toEqual([['a', 'bb'], ['ccc']]);
    expect(c.modelId).toBe('fake:1');
  });

  it('evicts the least recently used entry', async () => {
    const inner = counting();
    const c = new CachedEmbeddings(inner, { maxEntries: 2 });
    await c.embed(['a']);
    await c.embed(['b']);
    await c.embed(['a']); // a is now most recent
    await c.embed(['c']); // evicts b
    inner.calls.length = 0;
    await c.embed(['a', 'c']);
    expect(inner.calls).toEqual([]);
    await c.embed(['b']);
    expect(inner.calls).toEqual([['b']]);
    expect(c.size).toBe(2);
  });

  it('shares one call between concurrent requests and does not cache failures', async () => {
    const inner = counting();
    const c = new CachedEmbeddings(inner);
    const [x, y] = await Promise.all([c.embed(['q']), c.embed(['q'])]);
    expect(x[0]).toBe(y[0]);
    expect(inner.calls).toEqual([['q']]);

    let fail = true;
    const flaky: EmbeddingProvider = { modelId: 'f', dimensions: 1, close: async () => {}, embed: async (t) => { if (fail) throw new Error('down'); return t.map(() => Float32Array.of(1)); } };
    const d = new CachedEmbeddings(flaky);
    await expect(d.embed(['z'])).rejects.toThrow('down');
    fail = false;
    expect((await d.embed(['z']))[0][0]).toBe(1);
  });
  it("keeps each scope's queries apart: another workspace's query is neither a hit nor shared in flight (no timing oracle)", async () => {
    const inner = counting();
    const c = new CachedEmbeddings(inner, { maxEntries: 10 });
    await c.embedIn('workspace-a', ['secret merger']);
    await c.embedIn('workspace-b', ['secret merger']); // a miss: B cannot tell A asked it
    await c.embedIn('workspace-a', ['secret merger']); // A's own repeat is a hit
    expect(inner.calls).toEqual([['secret merger'], ['secret merger']]);
    await Promise.all([c.embedIn('workspace-c', ['same']), c.embedIn('workspace-d', ['same'])]);
    expect(inner.calls.slice(2)).toEqual([['same'], ['same']]);
  });
});
