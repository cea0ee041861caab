import { OpenAIEmbeddings, type EmbeddingsRequest } from '../../src/adapters/embeddings/openaiEmbeddings';

/** Fake server: embedding of "t<n>" is [n, 1]; echoes inputs in shuffled order. */
function fakeCreate(failures: ({ status?: number; name?: string; headers?: Record<string, string> } | null)[] = []) {
  const calls: EmbeddingsRequest[] = [];
  const create = async (req: EmbeddingsRequest) => {
    calls.push(req);
    const f = failures.shift();
    if (f) throw Object.assign(new Error(`fail ${f.status ?? f.name}`), f);
    const data = req.input.map((t, index) => ({ index, embedding: [Number(t.slice(1)) || 0, 1] }));
    return { data: data.reverse() };
  };
  return { calls, create };
}

describe('OpenAIEmbeddings', () => {
  const noSleep = { sleep: async () => undefined };

  it('splits inputs into batches and keeps input order, normalised', async () => {
    const { calls, create } = fakeCreate();
    const p = new OpenAIEmbeddings({ create, batchSize: 3, dimensions: 2, model: 'text-embedding-3-small', ...noSleep });
    const texts = Array.from({ length: 8 }, (_, i) => `t${i}`);
    const v = await p.embed(texts);
    expect(calls.map((c) => c.input.length)).toEqual([3, 3, 2]);
    expect(calls.every((c) => c.model === 'text-embedding-3-small' && c.dimensions === 2)).toBe(true);
    expect(calls.flatMap((c) => c.input)).toEqual(texts);
    expect(v).toHaveLength(8);
    v.forEach((x, i) => {
      expect(x).toBeInstanceOf(Float32Array);
      expect(x[0] / x[1]).toBeCloseTo(i, 5);
      expect(Math.hypot(x[0], x[1])).toBeCloseTo(1, 5);
    });
    expect(p.modelId).toBe('openai:text-embedding-3-small@2');
    expect(p.dimensions).toBe(2);
    expect(new OpenAIEmbeddings({ create }).dimensions).toBe(1536);
    expect(await p.embed([])).toEqual([]);
  });

  it('retries 429, 5xx and connection errors with growing jittered back-off, honouring Retry-After', async () => {
    const { calls, create } = fakeCreate([{ status: 429 }, { status: 503 }, { name: 'APIConnectionError' }, { status: 429, headers: { 'retry-after': '7' } }]);
    const sleeps: number[] = [];
    const p = new OpenAIEmbeddings({ create, baseDelayMs: 100, maxDelayMs: 60_000, maxRetries: 5, random: () => 0.5, sleep: async (ms) => { sleeps.push(ms); } });
    const v = await p.embed(['t3']);
    expect(v[0][0] / v[0][1]).toBeCloseTo(3, 5);
    expect(calls).toHaveLength(5);
    expect(sleeps).toEqual([50, 100, 200, 7000]);
  });

  it('gives up after maxRetries and does not retry client errors', async () => {
    const many = fakeCreate(Array.from({ length: 10 }, () => ({ status: 500 })));
    const p = new OpenAIEmbeddings({ create: many.create, maxRetries: 2, ...noSleep });
    await expect(p.embed(['t1'])).rejects.toThrow('fail 500');
    expect(many.calls).toHaveLength(3);

    const bad = fakeCreate([{ status: 400 }]);
    const q = new OpenAIEmbeddings({ create: bad.create, maxRetries: 5, ...noSleep });
    await expect(q.embed(['t1'])).rejects.toThrow('fail 400');
    expect(bad.calls).toHaveLength(1);
  });

  it('caps the back-off', async () => {
    const { create } = fakeCreate(Array.from({ length: 6 }, () => ({ status: 502 })));
    const sleeps: number[] = [];
    const p = new OpenAIEmbeddings({ create, baseDelayMs: 1000, maxDelayMs: 3000, maxRetries: 6, random: () => 0.999, sleep: async (ms) => { sleeps.push(ms); } });
    await p.embed(['t1']);
    expect(sleeps).toHaveLength(6);
    expect(Math.max(...sleeps)).toBeLessThanOrEqual(3000);
    expect(sleeps[0]).toBeCloseTo(999, 0);
  });

  it('rejects a response with missing vectors', async () => {
    const p = new OpenAIEmbeddings({ create: async () => ({ data: [{ index: 0, embedding: [1, 0] }] }), ...noSleep });
    await expect(p.embed(['a', 'b'])).rejects.toThrow(/1 vectors for 2 inputs/);
  });
});
