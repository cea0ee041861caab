import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedSearchIndex } from '../../src/adapters/embedded/embeddedSearchIndex';
import { createGatherer, createMemory } from '../../src/adapters/embedded/int8Scan';
import { type AnnSettings, DEFAULT_ANN } from '../../src/adapters/embedded/ivfIndex';
import { type SlabScope, VectorSlab } from '../../src/adapters/embedded/vectorSlab';
import type { IndexedChunk } from '../../src/ports/searchIndex';
import { mulberry32 as rng } from '../../src/util/random';
import { runUntilSaidThenKill } from '../support/killed';

function normalise(v: Float32Array): Float32Array {
  let n = 0;
  for (const x of v) n += x * x;
  n = Math.sqrt(n);
  return v.map((x) => x / n);
}
const uniform = (rand: () => number, dims: number): Float32Array => normalise(Float32Array.from({ length: dims }, () => rand() * 2 - 1));
/** Points around `centres` (as text embeddings are: topics, with spread). */
function clustered(rand: () => number, centres: Float32Array[], spread: number): Float32Array {
  const c = centres[Math.floor(rand() * centres.length)];
  return normalise(c.map((x) => x + (rand() * 2 - 1) * spread));
}
const dot = (a: Float32Array, b: Float32Array): number => a.reduce((s, x, i) => s + x * b[i], 0);

const dims = 32;
const ann = (over: Partial<AnnSettings>): AnnSettings => ({ ...DEFAULT_ANN, buildAt: 2000, minScope: 2000, minProbe: 100, ...over });

/** A slab of `rows` vectors, 4 rows per document (rows 1..n, document (row-1)/4). */
function slabOf(vectors: Float32Array[], settings: AnnSettings): VectorSlab {
  const slab = new VectorSlab(settings);
  slab.setDims(dims);
  vectors.forEach((v, i) => slab.add(i + 1, Math.floor(i / 4), v));
  return slab;
}
function scopeOf(docs: number, allowed: (d: number) => boolean): SlabScope {
  const mask = new Uint8Array(docs);
  const list: number[] = [];
  for (let d = 0; d < docs; d++) {
    if (allowed(d)) {
      mask[d] = 1;
      list.push(d);
    }
  }
  return { mask, docs: list, chunks: list.length * 4 };
}
/** The exact top k rows (float dot products) among the rows whose document the scope allows. */
function exactTop(vectors: (Float32Array | undefined)[], scope: SlabScope, q: Float32Array, k: number): number[] {
  const scored: { row: number; s: number }[] = [];
  vectors.forEach((v, i) => {
    if (v && scope.mask[Math.floor(i / 4)] === 1) scored.push({ row: i + 1, s: dot(v, q) });
  });
  return scored.sort((a, b) => b.s - a.s).slice(0, k).map((x) => x.row);
}
/** Recall@10 of the slab's candidates (re-scored exactly, as the index does) against the exact top 10. */
function recallAt10(slab: VectorSlab, vectors: (Float32Array | undefined)[], scope: SlabScope, queries: Float32Array[]): number {
  let found = 0;
  for (const q of queries) {
    const truth = new Set(exactTop(vectors, scope, q, 10));
    const top = slab
      .topK(q, scope, 100)
      .map((row) => ({ row, s: dot(vectors[row - 1]!, q) }))
      .sort((a, b) => b.s - a.s)
      .slice(0, 10);
    found += top.filter((t) => truth.has(t.row)).length;
  }
  return found / (queries.length * 10);
}

describe('the approximate dense index (IVF over the int8 slab)', () => {
  it('the gather kernel (pairs of rows, odd tails) equals the scalar dot products of the rows it is given', () => {
    const memory = createMemory(32);
    const gather = createGatherer(memory);
    const rand = rng(3);
    for (const stride of [64, 128, 512]) {
      const n = 40;
      const q16 = new Int16Array(memory.buffer, 0, stride);
      const qMax = Math.min(32767, Math.floor(0x7fffffff / (127 * stride)));
      for (let i = 0; i < stride; i++) q16[i] = Math.round((rand() * 2 - 1) * qMax);
      const base = 16384;
      const i8 = new Int8Array(memory.buffer, base, n * stride);
      for (let i = 0; i < i8.length; i++) i8[i] = Math.round((rand() * 2 - 1) * 127);
      // Pairs of rows and an odd tail; a row twice.
      const rows = [5, 0, 39, 5, 17, 22, 38];
      const idxOff = base + n * stride;
      for (const count of [1, 2, 6, 7]) {
        new Int32Array(memory.buffer, idxOff, count).set(rows.slice(0, count));
        gather(base, idxOff, count, stride, 0);
        const out = new Int32Array(memory.buffer, idxOff, count);
        rows.slice(0, count).forEach((r, k) => {
          let s = 0;
          for (let j = 0; j < stride; j++) s += i8[r * stride + j] * q16[j];
          expect(out[k]).toBe(s);
        });
      }
    }
  });

  it('finds the exact top 10 (recall@10 ≥ 0.95) on clustered vectors while scanning a small share of them', () => {
    const rand = rng(1);
    const centres = Array.from({ length: 60 }, () => uniform(rand, dims));
    const vectors = Array.from({ length: 12_000 }, () => clustered(rand, centres, 0.35));
    const slab = slabOf(vectors, ann({ probeLists: 20 }));
    expect(slab.annIndex).toBeDefined();
    expect(slab.annIndex!.lists).toBeGreaterThan(50);
    const all = scopeOf(3000, () => true);
    const queries = Array.from({ length: 40 }, () => clustered(rand, centres, 0.35));
    expect(recallAt10(slab, vectors, all, queries)).toBeGreaterThanOrEqual(0.95);
    // Scanning fewer lists loses recall: the figure above is the index's, not an exact scan's.
    slab.configureAnn(ann({ probeLists: 0.5, minProbe: 1 }));
    expect(recallAt10(slab, vectors, all, queries)).toBeLessThan(0.9);
  });

  it('on uniform random vectors (no clusters) probing more lists reaches the exact top 10 too', () => {
    const rand = rng(2);
    const vectors = Array.from({ length: 8000 }, () => uniform(rand, dims));
    const slab = slabOf(vectors, ann({ probeLists: 90 }));
    expect(slab.annIndex).toBeDefined();
    const queries = Array.from({ length: 30 }, () => uniform(rand, dims));
    expect(recallAt10(slab, vectors, scopeOf(2000, () => true), queries)).toBeGreaterThanOrEqual(0.95);
  });

  it('never returns a row outside the scope, nor a deleted one; re-added rows are found; narrow scopes are exact', () => {
    const rand = rng(4);
    const centres = Array.from({ length: 30 }, () => uniform(rand, dims));
    const vectors: (Float32Array | undefined)[] = Array.from({ length: 8000 }, () => clustered(rand, centres, 0.4));
    const slab = slabOf(vectors as Float32Array[], ann({ probeLists: 18 }));
    const trained = slab.annIndex!;
    // Delete a third of the rows, re-add some of them under new row ids with new vectors.
    for (let i = 0; i < vectors.length; i += 3) {
      slab.remove(i + 1);
      vectors[i] = undefined;
    }
    for (let i = 0; i < 300; i += 3) {
      const v = clustered(rand, centres, 0.4);
      const row = 100_000 + i;
      slab.add(row, Math.floor(i / 4), v);
      vectors[row - 1] = v;
    }
    expect(slab.annIndex).toEqual(trained); // not trained again: neither doubled nor quartered
    const evenDocs = scopeOf(2000, (d) => d % 2 === 0);
    for (let t = 0; t < 20; t++) {
      const q = clustered(rand, centres, 0.4);
      const got = slab.topK(q, evenDocs, 100);
      expect(got.length).toBeGreaterThan(0);
      for (const row of got) {
        expect(vectors[row - 1]).toBeDefined();
        expect(evenDocs.mask[Math.floor(((row >= 100_000 ? row - 100_000 : row - 1)) / 4)]).toBe(1);
      }
    }
    // Each re-added row is its own nearest neighbour.
    for (let i = 0; i < 300; i += 30) {
      const row = 100_000 + i;
      expect(slab.topK(vectors[row - 1]!, scopeOf(2000, () => true), 1)).toEqual([row]);
    }
    // A scope below minScope is scanned exactly: the same rows as with the index switched off.
    const narrow = scopeOf(2000, (d) => d % 10 === 0); // 800 chunks
    const q = clustered(rand, centres, 0.4);
    const withIndex = slab.topK(q, narrow, 50);
    slab.configureAnn(ann({ probeLists: 18, searchExact: true }));
    expect(withIndex).toEqual(slab.topK(q, narrow, 50));
  });

  it('is trained above the threshold, again when the rows double, and dropped well below it', () => {
    const rand = rng(6);
    const slab = new VectorSlab(ann({}));
    slab.setDims(dims);
    let row = 1;
    for (; row < 2000; row++) slab.add(row, row, uniform(rand, dims));
    expect(slab.annIndex).toBeUndefined();
    slab.add(row++, 0, uniform(rand, dims));
    expect(slab.annIndex).toEqual({ lists: expect.any(Number), trainedAt: 2000, restored: false });
    for (; row <= 4000; row++) slab.add(row, row, uniform(rand, dims));
    expect(slab.annIndex!.trainedAt).toBe(4000);
    for (let r = 1; r <= 3500; r++) slab.remove(r);
    expect(slab.annIndex).toBeUndefined();
    slab.configureAnn(ann({ buildAt: 0 }));
    expect(slab.annIndex!.trainedAt).toBe(500);
    slab.configureAnn(ann({ enabled: false, buildAt: 0 }));
    expect(slab.annIndex).toBeUndefined();
  });

  it('from backgroundTrainingAt rows, trains again in the background: the old index serves meanwhile, writes during the training reach the new one', async () => {
    const rand = rng(21);
    const centres = Array.from({ length: 25 }, () => uniform(rand, dims));
    const vectors = new Map<number, Float32Array>();
    const slab = new VectorSlab(ann({ backgroundTrainingAt: 3000, probeLists: 20 }));
    slab.setDims(dims);
    let row = 1;
    const add = (): void => {
      const v = clustered(rand, centres, 0.4);
      vectors.set(row, v);
      slab.add(row, row % 500, v);
      row++;
    };
    for (let i = 0; i < 2000; i++) add(); // below backgroundTrainingAt: trained at once
    expect(slab.annTraining).toBe(false);
    expect(slab.annIndex!.trainedAt).toBe(2000);
    while (row <= 4000) add(); // doubled: the next one is trained in the background
    expect(slab.annTraining).toBe(true);
    expect(slab.annIndex!.trainedAt).toBe(2000);
    const all = { mask: new Uint8Array(500).fill(1), docs: Array.from({ length: 500 }, (_, d) => d), chunks: 4000 };
    const removed = new Set<number>();
    let turns = 0;
    while (slab.annTraining) {
      // Writes between the slices: new rows, deleted ones (their slots reused by the next adds).
      add();
      const gone = 1 + ((turns * 37) % 3000);
      if (!removed.has(gone)) {
        slab.remove(gone);
        vectors.delete(gone);
        removed.add(gone);
      }
      // Searches meanwhile answer from the index trained before.
      const probe = [...vectors.keys()][(turns * 13) % vectors.size];
      expect(slab.topK(vectors.get(probe)!, all, 1)).toEqual([probe]);
      turns++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(turns).toBeGreaterThan(3); // it did run in slices
    expect(slab.annIndex!.trainedAt).toBeGreaterThanOrEqual(4000);
    // The new index holds every live row (including those written during the training) and no deleted one.
    const rows = slab.indexRows()!;
    expect(rows.ivf.size).toBe(slab.liveCount);
    expect(Array.from(rows.lists).every((l) => l >= 0)).toBe(true);
    for (const [r, v] of [...vectors].filter((_, i) => i % 40 === 0)) expect(slab.topK(v, all, 1)).toEqual([r]);
    for (const r of removed) expect(slab.inScope(r, all.mask)).toBe(false);
    // finishAnnTraining ends a training under way at once; a bulk load stops one.
    while (!slab.annTraining) add(); // doubled again
    const at = slab.liveCount;
    expect(at).toBe(2 * slab.annIndex!.trainedAt);
    slab.finishAnnTraining();
    expect(slab.annTraining).toBe(false);
    expect(slab.annIndex!.trainedAt).toBe(at);
    while (!slab.annTraining) add();
    slab.beginBulk();
    expect(slab.annTraining).toBe(false);
    expect(slab.annIndex).toBeUndefined();
    slab.endBulk(); // (as a start-up without the index's file) trained in the background too
    expect(slab.annTraining).toBe(true);
    slab.finishAnnTraining();
    expect(slab.annIndex!.trainedAt).toBe(slab.liveCount);
    slab.configureAnn(ann({ backgroundTrainingAt: 3000, probeLists: 30 })); // new settings take effect at once
    expect(slab.annTraining).toBe(false);
    expect(slab.annIndex!.trainedAt).toBe(slab.liveCount);
  });

  describe('beside the index file', () => {
    let dir: string;
    beforeAll(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-ivf-'));
    });
    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

    const chunk = (documentId: string, i: number, v: Float32Array, tags: string[] = []): IndexedChunk => ({
      workspaceId: 'w', documentId, documentTitle: documentId, purpose: 'KNOWLEDGE', tags, chunkIndex: i, content: `text ${i}`, vector: v, model: 'M',
    });
    const settings = { buildAt: 1000, minScope: 1000, probeLists: 16, minProbe: 50 };

    it('is read back after a clean close, caught up when its file is older, trained again when it is truncated, its vectors changed or it is missing', async () => {
      const file = path.join(dir, 'ivf.sqlite');
      const ivfFile = `${file}.ivf`;
      const rand = rng(8);
      const centres = Array.from({ length: 20 }, () => uniform(rand, dims));
      const vec = (): Float32Array => clustered(rand, centres, 0.4);
      let index = new EmbeddedSearchIndex(file, { ann: settings });
      const batch = Array.from({ length: 400 }, (_, d) => ({ documentId: `d${d}`, chunks: [0, 1, 2, 3].map((i) => chunk(`d${d}`, i, vec(), d % 5 === 0 ? ['five'] : [])) }));
      await index.upsertDocuments(batch);
      expect(index.stats().denseIndex).toMatchObject({ from: 'trained' });
      const queries = Array.from({ length: 10 }, vec);
      const answers = async (ix: EmbeddedSearchIndex): Promise<string[]> => {
        const out: string[] = [];
        for (const q of queries) {
          for (const tags of [undefined, ['five']]) {
            const hits = await ix.search({ text: '', vector: q, filters: { workspaceId: 'w', tags }, k: 10, mode: 'dense' });
            out.push(hits.map((h) => `${h.documentId}#${h.chunkIndex}`).join(' '));
          }
        }
        return out;
      };
      const before = await answers(index);
      await index.close();
      expect(fs.existsSync(ivfFile)).toBe(true);

      index = new EmbeddedSearchIndex(file, { ann: settings });
      expect(index.stats().denseIndex).toMatchObject({ from: 'file' });
      expect(await answers(index)).toEqual(before);
      const saved = fs.readFileSync(ivfFile);
      // Writes after the file was read; then (as after kill -9) the older file is found beside the file.
      await index.deleteDocument('d3');
      const v400 = vec();
      await index.upsertDocument('d400', [chunk('d400', 0, v400)]);
      const latest = await answers(index);
      await index.close();
      fs.writeFileSync(ivfFile, saved);
      index = new EmbeddedSearchIndex(file, { ann: settings });
      expect(index.stats().denseIndex).toMatchObject({ from: 'caught-up' });
      const caughtUp = await answers(index);
      expect(caughtUp.join(' ')).not.toContain('d3#');
      // d400's chunk, written after the file, was given its list at the read: it is its own nearest neighbour.
      expect((await index.search({ text: '', vector: v400, filters: { workspaceId: 'w' }, k: 1, mode: 'dense' }))[0]).toMatchObject({ documentId: 'd400', chunkIndex: 0 });
      await index.close();
      fs.rmSync(ivfFile);
      index = new EmbeddedSearchIndex(file, { ann: settings });
      expect(index.stats().denseIndex).toMatchObject({ from: 'trained' });
      const retrained = await answers(index);
      expect(retrained.join(' ')).not.toContain('d3#');
      await index.close();
      // Truncated: trained again.
      const good = fs.readFileSync(ivfFile);
      fs.writeFileSync(ivfFile, good.subarray(0, good.byteLength - 100));
      index = new EmbeddedSearchIndex(file, { ann: settings });
      expect(index.stats().denseIndex).toMatchObject({ from: 'trained' });
      await index.close();
      // Vectors changed in place (a re-embedding of the active model): the older file is not used.
      const beforeVectors = fs.readFileSync(ivfFile);
      index = new EmbeddedSearchIndex(file, { ann: settings });
      expect(index.stats().denseIndex).toMatchObject({ from: 'file' });
      const moved = vec();
      await index.putVectors('d10', 'M', [{ chunkIndex: 0, vector: moved }]);
      expect((await index.search({ text: '', vector: moved, filters: { workspaceId: 'w' }, k: 1, mode: 'dense' }))[0]).toMatchObject({ documentId: 'd10', chunkIndex: 0 });
      await index.close();
      fs.writeFileSync(ivfFile, beforeVectors);
      index = new EmbeddedSearchIndex(file, { ann: settings });
      expect(index.stats().denseIndex).toMatchObject({ from: 'trained' });
      expect((await index.search({ text: '', vector: moved, filters: { workspaceId: 'w' }, k: 1, mode: 'dense' }))[0]).toMatchObject({ documentId: 'd10', chunkIndex: 0 });
      expect(latest.length).toBe(retrained.length);
      await index.close();
    });

    it('after kill -9 following writes, the older file is caught up: every written chunk found, none deleted', async () => {
      const file = path.join(dir, 'killed.sqlite');
      const rand = rng(12);
      const centres = Array.from({ length: 20 }, () => uniform(rand, dims));
      const vec = (): number[] => Array.from(clustered(rand, centres, 0.4));
      let index = new EmbeddedSearchIndex(file, { ann: settings });
      await index.upsertDocuments(Array.from({ length: 300 }, (_, d) => ({ documentId: `d${d}`, chunks: [0, 1, 2, 3].map((i) => chunk(`d${d}`, i, Float32Array.from(vec()))) })));
      await index.close(); // a clean close: the IVF file is written
      expect(fs.existsSync(`${file}.ivf`)).toBe(true);
      // Another process opens it (from the file), writes, deletes, and is killed.
      const extra = Array.from({ length: 40 }, (_, d) => ({ documentId: `e${d}`, chunks: [0, 1].map((i) => ({ ...chunk(`e${d}`, i, new Float32Array(0)), vector: vec() })) }));
      const input = path.join(dir, 'killed-input.json');
      fs.writeFileSync(input, JSON.stringify({ file, settings, extra }));
      const code = `
        const { EmbeddedSearchIndex } = require(${JSON.stringify(path.resolve(__dirname, '../../dist/src/adapters/embedded/embeddedSearchIndex'))});
        const { file, settings, extra } = JSON.parse(require('node:fs').readFileSync(process.argv[1], 'utf8'));
        (async () => {
          const index = new EmbeddedSearchIndex(file, { ann: settings });
          const from = index.stats().denseIndex.from;
          for (const e of extra) await index.upsertDocument(e.documentId, e.chunks);
          await index.deleteDocument('d7');
          console.log('written ' + from);
          setInterval(() => undefined, 1000);
        })();`;
      expect(await runUntilSaidThenKill(code, [input], 'written')).toBe('written file');
      index = new EmbeddedSearchIndex(file, { ann: settings });
      expect(index.stats().denseIndex).toMatchObject({ from: 'caught-up' });
      expect(index.stats().chunks).toBe(300 * 4 - 4 + 40 * 2);
      for (const e of extra) {
        for (const c of e.chunks) {
          const [hit] = await index.search({ text: '', vector: c.vector, filters: { workspaceId: 'w' }, k: 1, mode: 'dense' });
          expect(`${hit.documentId}#${hit.chunkIndex}`).toBe(`${e.documentId}#${c.chunkIndex}`);
        }
      }
      for (const e of extra.slice(0, 10)) {
        const hits = await index.search({ text: '', vector: e.chunks[0].vector, filters: { workspaceId: 'w' }, k: 200, mode: 'dense' });
        expect(hits.some((h) => h.documentId === 'd7')).toBe(false);
      }
      await index.close();
    });

    it('follows a model switch: the next model\'s slab has its own index, which the switch swaps in', async () => {
      const file = path.join(dir, 'switch.sqlite');
      const rand = rng(9);
      let index = new EmbeddedSearchIndex(file, { ann: settings });
      const docs = Array.from({ length: 300 }, (_, d) => ({ documentId: `d${d}`, chunks: [0, 1, 2, 3].map((i) => chunk(`d${d}`, i, uniform(rand, dims))) }));
      await index.upsertDocuments(docs);
      expect(index.stats().denseIndex).toBeDefined();
      await index.beginVectorModel({ modelId: 'N', dimensions: 16 });
      const next = new Map<string, Float32Array>();
      for (const { documentId } of docs) {
        const vs = [0, 1, 2, 3].map(() => uniform(rand, 16));
        vs.forEach((v, i) => next.set(`${documentId}#${i}`, v));
        await index.putVectors(documentId, 'N', vs.map((vector, chunkIndex) => ({ chunkIndex, vector })));
      }
      await index.switchVectorModel({ modelId: 'N', dimensions: 16 });
      expect(index.stats()).toMatchObject({ dims: 16, denseIndex: { from: 'trained' } });
      const [key, v] = [...next][777];
      const hit = (await index.search({ text: '', vector: v, filters: { workspaceId: 'w' }, k: 1, mode: 'dense' }))[0];
      expect(`${hit.documentId}#${hit.chunkIndex}`).toBe(key);
      await index.close();
      index = new EmbeddedSearchIndex(file, { ann: settings });
      expect(index.stats()).toMatchObject({ dims: 16, denseIndex: { from: 'file' } });
      const again = (await index.search({ text: '', vector: v, filters: { workspaceId: 'w' }, k: 1, mode: 'dense' }))[0];
      expect(`${again.documentId}#${again.chunkIndex}`).toBe(key);
      await index.deleteWorkspace('w');
      expect(index.stats().denseIndex).toBeUndefined();
      expect(await index.search({ text: '', vector: v, filters: { workspaceId: 'w' }, k: 1, mode: 'dense' })).toEqual([]);
      await index.close();
      expect(fs.existsSync(`${file}.ivf`)).toBe(false);
    });
  });
});
