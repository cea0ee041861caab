import { LocalEmbeddings } from '../../src/adapters/embeddings/localEmbeddings';

const cosine = (a: Float32Array, b: Float32Array): number => a.reduce((s, x, i) => s + x * b[i], 0);

describe('LocalEmbeddings (real model in worker threads)', () => {
  let provider: LocalEmbeddings;
  beforeAll(() => {
    provider = new LocalEmbeddings({ threads: 2, batchSize: 4 });
  });
  afterAll(async () => {
    await provider.close();
  });

  it('embeds into unit vectors where similar sentences are closer than unrelated ones', async () => {
    const texts = [
      'How do I reset my password?',
      'I forgot my password and need to change it.',
      'The boundary layer separates from the wing at high angles of attack.',
      'Airflow over an airfoil detaches when the angle of attack is too large.',
      'Tomatoes grow best in warm, sunny gardens.',
      'How do I reset my password?',
    ];
    const v = await provider.embed(texts);
    expect(provider.modelId).toBe('local:use-lite-512');
    expect(v).toHaveLength(texts.length);
    for (const x of v) {
      expect(x).toBeInstanceOf(Float32Array);
      expect(x).toHaveLength(512);
      expect(Math.sqrt(cosine(x, x))).toBeCloseTo(1, 4);
    }
    // Batches of 4 over two workers come back in input order.
    expect(cosine(v[0], v[5])).toBeCloseTo(1, 4);
    expect(cosine(v[0], v[1])).toBeGreaterThan(cosine(v[0], v[2]) + 0.1);
    expect(cosine(v[0], v[1])).toBeGreaterThan(cosine(v[0], v[4]) + 0.1);
    expect(cosine(v[2], v[3])).toBeGreaterThan(cosine(v[2], v[4]) + 0.1);
    expect(cosine(v[2], v[3])).toBeGreaterThan(cosine(v[2], v[1]) + 0.1);
  });

  it('keeps the event loop free while embedding', async () => {
    const texts = Array.from({ length: 64 }, (_, i) => `sentence number ${i} about supersonic flow over a swept wing`);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const start = Date.now();
    await provider.embed(texts);
    const elapsed = Date.now() - start;
    clearInterval(timer);
    // If the model ran on this thread, no timer callback could run during the call.
    expect(elapsed).toBeGreaterThan(0);
    expect(ticks).toBeGreaterThan(2);
  });

  it('fails the in-flight batch of a crashed worker and recovers with a new one', async () => {
    const p = new LocalEmbeddings({ threads: 1 });
    try {
      await p.embed(['warm up']);
      const pending = p.embed(['this batch is lost']);
      p.crashOneWorkerForTesting();
      await expect(pending).rejects.toThrow(/exited/);
      const [again] = await p.embed(['works again']);
      expect(again).toHaveLength(512);
    } finally {
      await p.close();
    }
    await expect(p.embed(['closed'])).rejects.toThrow(/closed/);
  });
});
