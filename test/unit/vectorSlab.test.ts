import { bufferToFloats, dotBuffer, type SlabScope, VectorSlab } from '../../src/adapters/embedded/vectorSlab';
import { mulberry32 as rng } from '../../src/util/random';

function unit(rand: () => number, dims: number): Float32Array {
  const v = Float32Array.from({ length: dims }, () => rand() * 2 - 1);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}
const dot = (a: Float32Array, b: Float32Array): number => a.reduce((s, x, i) => s + x * b[i], 0);

/** Scope over documents 0..docs-1 with those in `allowed` set. */
function scope(docs: number, allowed: number[], chunksPerDoc: number): SlabScope {
  const mask = new Uint8Array(docs);
  for (const d of allowed) mask[d] = 1;
  return { mask, docs: allowed, chunks: allowed.length * chunksPerDoc };
}

describe('VectorSlab', () => {
  const dims = 48;

  function filled(docs: number, perDoc: number, seed = 1): { slab: VectorSlab; vectors: Map<number, Float32Array> } {
    const rand = rng(seed);
    const slab = new VectorSlab();
    slab.setDims(dims);
    const vectors = new Map<number, Float32Array>();
    let row = 1;
    for (let d = 0; d < docs; d++) {
      for (let c = 0; c < perDoc; c++) {
        const v = unit(rand, dims);
        vectors.set(row, v);
        slab.add(row++, d, v);
      }
    }
    return { slab, vectors };
  }

  it('finds the nearest rows (int8 approximation) in both scan strategies', () => {
    const { slab, vectors } = filled(200, 5);
    expect(slab.liveCount).toBe(1000);
    const rand = rng(99);
    for (let q = 0; q < 20; q++) {
      const query = unit(rand, dims);
      // Whole index (one pass over all slots) and a small scope (runs of the documents' slots).
      for (const allowed of [Array.from({ length: 200 }, (_, d) => d), [3, 17, 42, 150]]) {
        const sc = scope(200, allowed, 5);
        const rows = [...vectors.keys()].filter((r) => allowed.includes(Math.floor((r - 1) / 5)));
        const exact = rows.sort((a, b) => dot(query, vectors.get(b)!) - dot(query, vectors.get(a)!)).slice(0, 10);
        const got = slab.topK(query, sc, 10);
        expect(got).toHaveLength(10);
        // int8 may swap near-ties: the exact top 3 are all found among the top 10.
        for (const r of exact.slice(0, 3)) expect(got).toContain(r);
        // Best first by approximate score, ties aside.
        const scores = got.map((r) => dot(query, vectors.get(r)!));
        for (let i = 1; i < scores.length; i++) expect(scores[i]).toBeLessThanOrEqual(scores[i - 1] + 0.02);
      }
    }
  });

  it('bounds the error of each int8 cosine: the exact float cosine is always within it', () => {
    const { slab, vectors } = filled(100, 10, 7);
    slab.add(5000, 3, null); // a row without a vector: 0, exactly
    const rand = rng(11);
    const ids = [...vectors.keys(), 5000, 999_999 /* not held */];
    const cosines = new Float64Array(ids.length);
    const errors = new Float64Array(ids.length);
    let widest = 0;
    let tightest = Infinity;
    for (let q = 0; q < 30; q++) {
      // Unit queries, and one of very uneven components (a large L1 norm is the worst case).
      const query = q === 0 ? unit(() => 0.9, dims) : unit(rand, dims);
      slab.approximateCosines(ids, query, cosines, errors);
      ids.forEach((id, i) => {
        const v = vectors.get(id);
        if (id === 5000) return expect([cosines[i], errors[i]]).toEqual([0, 0]);
        if (!v) return expect(errors[i]).toBe(-1);
        const exact = dotBuffer(query, Buffer.from(v.buffer, v.byteOffset, v.byteLength));
        expect(Math.abs(exact - cosines[i])).toBeLessThanOrEqual(errors[i]);
        widest = Math.max(widest, errors[i]);
        tightest = Math.min(tightest, Math.abs(exact - cosines[i]) / errors[i]);
      });
    }
    // A bound that says something: well under the spread of cosines between random vectors.
    expect(widest).toBeLessThan(0.05);
    expect(tightest).toBeGreaterThanOrEqual(0);
  });

  it('removes rows, reuses their slots and keeps each document\'s slots for the scoped scan', () => {
    const { slab, vectors } = filled(10, 3, 2);
    const query = vectors.get(5)!; // document 1
    expect(slab.topK(query, scope(10, [1], 3), 1)).toEqual([5]);
    slab.remove(5);
    slab.remove(5); // twice: no effect
    expect(slab.liveCount).toBe(29);
    expect(slab.inScope(5, Uint8Array.of(1, 1, 1, 1, 1, 1, 1, 1, 1, 1))).toBe(false);
    expect(slab.topK(query, scope(10, [0, 2, 3, 4, 5, 6, 7, 8, 9], 3), 30)).not.toContain(5);
    // A re-added document: its slot list is dropped, then rebuilt (the freed slot is reused).
    slab.dropDoc(1);
    slab.remove(4);
    slab.remove(6);
    slab.add(100, 1, query);
    slab.add(101, 1, vectors.get(4)!);
    expect(slab.liveCount).toBe(29);
    expect(slab.topK(query, scope(10, [1], 2), 2)).toEqual([100, 101]);
    expect(slab.inScope(100, Uint8Array.of(0, 1))).toBe(true);
    expect(slab.inScope(100, Uint8Array.of(1, 0))).toBe(false);
  });

  it('grows its memory beyond the first 1024 slots without moving the vectors', () => {
    const { slab, vectors } = filled(700, 3, 3); // 2100 rows
    const before = slab.vectorBytes;
    expect(before).toBeGreaterThan(2100 * 64);
    for (const [row, v] of [...vectors].filter((_, i) => i % 97 === 0)) {
      expect(slab.topK(v, scope(700, Array.from({ length: 700 }, (_, d) => d), 3), 1)).toEqual([row]);
    }
  });

  it('holds rows added before the dimensions are known until they are fixed', () => {
    const slab = new VectorSlab();
    slab.add(1, 0, null);
    slab.add(2, 1, null);
    slab.add(3, 2, null);
    slab.dropPending(1);
    expect(slab.liveCount).toBe(0);
    const writes = slab.writes;
    slab.fixDims(8);
    expect(slab.dims).toBe(8);
    expect(slab.liveCount).toBe(2);
    expect(slab.writes).toBe(writes + 2);
    expect(slab.inScope(1, Uint8Array.of(1, 1, 1))).toBe(true);
    expect(slab.inScope(2, Uint8Array.of(1, 1, 1))).toBe(false);
    // Vector-less rows score 0: still candidates of a scope that holds nothing else.
    expect(slab.topK(Float32Array.from({ length: 8 }, () => 0.3), scope(3, [0, 2], 1), 5).sort()).toEqual([1, 3]);
  });

  it('rejects unsupported dimensions and ignores zero queries', () => {
    const slab = new VectorSlab();
    expect(() => slab.setDims(0)).toThrow('unsupported vector dimensions');
    expect(() => slab.setDims(8193)).toThrow('unsupported vector dimensions');
    expect(() => slab.setDims(1.5)).toThrow('unsupported vector dimensions');
    expect(slab.topK(new Float32Array(8), scope(1, [0], 1), 5)).toEqual([]);
    const { slab: full } = filled(2, 2);
    expect(full.topK(new Float32Array(dims), scope(2, [0, 1], 2), 5)).toEqual([]);
    expect(full.topK(new Float32Array(dims).fill(0.1), scope(2, [], 0), 5)).toEqual([]);
  });

  it('clear drops every row and the memory, counts as a write and unfixes the dimensions', () => {
    const { slab } = filled(4, 2);
    const writes = slab.writes;
    slab.noteWrites(3);
    expect(slab.writes).toBe(writes + 3);
    slab.clear();
    expect(slab.writes).toBe(writes + 4);
    expect(slab).toMatchObject({ dims: 0, liveCount: 0, vectorBytes: 0 });
    expect(slab.inScope(1, Uint8Array.of(1, 1, 1, 1))).toBe(false);
    slab.setDims(dims);
    slab.add(7, 0, new Float32Array(dims).fill(0.2));
    expect(slab.topK(new Float32Array(dims).fill(0.2), scope(1, [0], 1), 3)).toEqual([7]);
  });
});

describe('stored vectors', () => {
  it('dotBuffer: exact float32 dot product of aligned and unaligned blobs, memoised per query', () => {
    const v = Float32Array.from([0.5, -0.25, 0.125]);
    const q = Float32Array.from([1, 2, 4]);
    const aligned = Buffer.from(v.buffer);
    const raw = Buffer.alloc(13);
    Buffer.from(v.buffer).copy(raw, 1);
    const unaligned = raw.subarray(1);
    expect(dotBuffer(q, aligned)).toBe(0.5);
    expect(dotBuffer(q, unaligned)).toBe(0.5);
    expect(Array.from(bufferToFloats(unaligned))).toEqual([0.5, -0.25, 0.125]);
    // Memoised by (query, blob): a changed blob keeps its first answer for the same query.
    aligned.writeFloatLE(1, 0);
    expect(dotBuffer(q, aligned)).toBe(0.5);
    expect(dotBuffer(Float32Array.from(q), aligned)).toBe(1);
  });
});
