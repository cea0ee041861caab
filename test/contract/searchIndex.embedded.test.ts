import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedSearchIndex } from '../../src/adapters/embedded/embeddedSearchIndex';
import { createMemory, createScanner } from '../../src/adapters/embedded/int8Scan';
import type { IndexedChunk } from '../../src/ports/searchIndex';
import { searchIndexContract } from './searchIndex.contract';
import { mulberry32 as rng } from '../../src/util/random';
import { runUntilSaidThenKill } from '../support/killed';

searchIndexContract('embedded (in memory)', async () => new EmbeddedSearchIndex(':memory:'));
// The approximate dense index (ivfIndex.ts) on from the first chunk, every in-scope member of its
// lists scanned: the same answers as the exact scan, so any slot its lists lose or keep shows.
const forcedAnn = { buildAt: 0, minScope: 0, probeLists: 1e9, minProbe: 1 };
searchIndexContract('embedded (in memory, approximate dense index forced on)', async () => new EmbeddedSearchIndex(':memory:', { ann: forcedAnn }));

it('the forced setting gives the index its approximate dense index from the first chunk', async () => {
  const index = new EmbeddedSearchIndex(':memory:', { ann: forcedAnn });
  expect(index.stats().denseIndex).toBeUndefined();
  await index.upsertDocument('d', [{ workspaceId: 'w', documentId: 'd', documentTitle: 't', purpose: 'KNOWLEDGE', tags: [], chunkIndex: 0, content: 'x', vector: [1, 0, 0] }]);
  expect(index.stats().denseIndex).toMatchObject({ lists: 1, trainedAt: 1 });
  await index.close();
});

describe('EmbeddedSearchIndex specifics', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-index-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  function unit(rand: () => number, dims: number): Float32Array {
    const v = new Float32Array(dims);
    let s = 0;
    for (let i = 0; i < dims; i++) {
      v[i] = rand() * 2 - 1;
      s += v[i] * v[i];
    }
    for (let i = 0; i < dims; i++) v[i] /= Math.sqrt(s);
    return v;
  }
  const chunk = (ws: string, docId: string, i: number, v: Float32Array, tags: string[] = []): IndexedChunk => ({
    workspaceId: ws, documentId: docId, documentTitle: `Title ${docId}`, purpose: 'KNOWLEDGE', tags, chunkIndex: i, content: `content ${docId} ${i}`, vector: v,
  });

  it('persists chunks, vectors and checkpoint across reopen', async () => {
    const file = path.join(dir, 'persist.sqlite');
    const rand = rng(1);
    const a = unit(rand, 40);
    const b = unit(rand, 40);
    let index = new EmbeddedSearchIndex(file);
    await index.upsertDocument('d1', [chunk('w', 'd1', 0, a, ['t1'])]);
    await index.upsertDocument('d2', [chunk('w', 'd2', 0, b)]);
    await index.setCheckpoint(99);
    await index.close();
    index = new EmbeddedSearchIndex(file);
    expect(await index.getCheckpoint()).toBe(99);
    expect(await index.countDocuments({ workspaceId: 'w', tags: ['t1'] })).toBe(1);
    const hits = await index.search({ text: '', vector: b, filters: { workspaceId: 'w' }, k: 2, mode: 'dense' });
    expect(hits.map((h) => h.documentId)).toEqual(['d2', 'd1']);
    const lexical = await index.search({ text: 'content d1', filters: { workspaceId: 'w' }, k: 1, mode: 'bm25' });
    expect(lexical[0].documentId).toBe('d1');
    await index.close();
  });

  it('after kill -9 following writes, the lexical index is caught up from the last snapshot (rows added, deleted, retitled, row ids reused): the rankings of a rebuild from the text', async () => {
    const file = path.join(dir, 'crash.sqlite');
    const snapshot = `${file}.lexical`;
    const rand = rng(31);
    const words = 'shock wave boundary layer flow heat transfer wing nozzle jet mach pressure laminar turbulent'.split(' ');
    const text = (): string => Array.from({ length: 8 + Math.floor(rand() * 30) }, () => words[Math.floor(rand() * words.length)]).join(' ');
    const doc = (d: number, extra = ''): IndexedChunk[] =>
      [0, 1].map((i) => ({ ...chunk(d % 4 === 0 ? 'other' : 'w', `d${d}`, i, unit(rand, 8)), documentTitle: `${words[d % words.length]} notes`, content: `${text()} ${extra}` }));
    let index = new EmbeddedSearchIndex(file);
    for (let d = 0; d < 40; d++) await index.upsertDocument(`d${d}`, doc(d, d === 39 ? 'quokka' : ''));
    await index.close();
    const first = fs.readFileSync(snapshot); // holds d39, the last rows of workspace w
    index = new EmbeddedSearchIndex(file);
    await index.deleteDocument('d39');
    await index.close();
    // Another process: d40 takes d39's row ids (the next id comes from the rows on disk), a retitle, a deletion, a workspace deleted; then killed.
    const input = path.join(dir, 'crash-input.json');
    fs.writeFileSync(input, JSON.stringify({ file, d40: doc(41, 'wombat').map((c) => ({ ...c, documentId: 'd40', vector: Array.from(c.vector) })) }));
    const code = `
      const { EmbeddedSearchIndex } = require(${JSON.stringify(path.resolve(__dirname, '../../dist/src/adapters/embedded/embeddedSearchIndex'))});
      const { file, d40 } = JSON.parse(require('node:fs').readFileSync(process.argv[1], 'utf8'));
      (async () => {
        const index = new EmbeddedSearchIndex(file);
        await index.upsertDocument('d40', d40);
        await index.updateDocumentFields('d5', { documentTitle: 'laminar laminar shock' });
        await index.deleteDocument('d7');
        await index.deleteWorkspace('other');
        console.log('written ' + index.stats().lexicalFrom);
        setInterval(() => undefined, 1000);
      })();`;
    expect(await runUntilSaidThenKill(code, [input], 'written')).toBe('written snapshot');
    const raw = new Database(file, { readonly: true });
    const reused = raw.prepare<[], number>("SELECT count(*) FROM chunks WHERE document_id = 'd40'").pluck().get();
    raw.close();
    expect(reused).toBe(2);
    const ranking = async (ix: EmbeddedSearchIndex): Promise<string[]> => {
      const out: string[] = [];
      for (const q of ['shock laminar', 'heat transfer nozzle', 'wing flow', 'turbulent boundary layer', 'wombat', 'quokka', 'laminar notes']) {
        for (const workspaceId of ['w', 'other']) {
          const hits = await ix.search({ text: q, filters: { workspaceId }, k: 20, mode: 'bm25' });
          out.push(hits.map((h) => `${h.documentId}#${h.chunkIndex}:${h.score.toFixed(12)}`).join(' '));
        }
      }
      return out;
    };
    // From the older snapshot too (it holds d39 under the ids d40 has now): caught up all the same.
    for (const base of [undefined, first]) {
      if (base) fs.writeFileSync(snapshot, base);
      index = new EmbeddedSearchIndex(file);
      expect(index.stats().lexicalFrom).toBe('caught-up');
      const caughtUp = await ranking(index);
      expect(caughtUp.join(' ')).toContain('d40#');
      expect(caughtUp.join(' ')).not.toMatch(/d39#|d7#/);
      expect((await index.search({ text: 'quokka', filters: { workspaceId: 'w' }, k: 5, mode: 'bm25' })).length).toBe(0);
      await index.close();
      fs.rmSync(snapshot);
      index = new EmbeddedSearchIndex(file);
      expect(index.stats().lexicalFrom).toBe('text');
      expect(await ranking(index)).toEqual(caughtUp);
      await index.close();
    }
  });

  it('the lexical index: read from its snapshot after a clean close, caught up when it is older, rebuilt from the text when it is corrupt, missing or wrong', async () => {
    const file = path.join(dir, 'snapshot.sqlite');
    const snapshot = `${file}.lexical`;
    const rand = rng(21);
    const words = 'shock wave boundary layer flow heat transfer wing nozzle jet mach pressure laminar turbulent'.split(' ');
    const text = (): string => Array.from({ length: 8 + Math.floor(rand() * 30) }, () => words[Math.floor(rand() * words.length)]).join(' ');
    const write = async (index: EmbeddedSearchIndex, from: number, to: number): Promise<void> => {
      for (let d = from; d < to; d++) {
        await index.upsertDocument(`d${d}`, [0, 1].map((i) => ({ ...chunk(d % 4 === 0 ? 'other' : 'w', `d${d}`, i, unit(rand, 8)), documentTitle: `${words[d % words.length]} notes`, content: text() })));
      }
    };
    const ranking = async (index: EmbeddedSearchIndex): Promise<string[]> => {
      const out: string[] = [];
      for (const q of ['shock laminar', 'heat transfer nozzle', 'wing flow', 'turbulent boundary layer']) {
        for (const workspaceId of ['w', 'other']) {
          const hits = await index.search({ text: q, filters: { workspaceId }, k: 20, mode: 'bm25' });
          out.push(hits.map((h) => `${h.documentId}#${h.chunkIndex}:${h.score.toFixed(12)}`).join(' '));
        }
      }
      return out;
    };
    let index = new EmbeddedSearchIndex(file);
    await write(index, 0, 120);
    await index.deleteDocument('d5');
    await index.updateDocumentFields('d7', { documentTitle: 'nozzle nozzle jet' });
    // A deleted document's words are not written into the snapshot.
    await index.upsertDocument('secret', [{ ...chunk('w', 'secret', 0, unit(rand, 8)), content: 'quetzalcoatlus wing' }]);
    expect((await index.search({ text: 'quetzalcoatlus', filters: { workspaceId: 'w' }, k: 1, mode: 'bm25' }))[0].documentId).toBe('secret');
    await index.deleteDocument('secret');
    const before = await ranking(index);
    await index.close();
    expect(fs.existsSync(snapshot)).toBe(true);
    expect(fs.readFileSync(snapshot).includes('quetzalcoatl')).toBe(false);
    // Reopened from the snapshot: the same rankings.
    index = new EmbeddedSearchIndex(file);
    expect(index.stats().lexicalFrom).toBe('snapshot');
    expect(await ranking(index)).toEqual(before);
    await write(index, 120, 160);
    await index.deleteWorkspace('other');
    const later = await ranking(index);
    await index.close();
    const stale = fs.readFileSync(snapshot);
    index = new EmbeddedSearchIndex(file);
    expect(index.stats().lexicalFrom).toBe('snapshot');
    expect(await ranking(index)).toEqual(later);
    await index.close();
    // A snapshot of an earlier state (as after a crash that followed writes) is caught up: the
    // rows whose text was set since (a retitle keeps the row ids) are indexed again from their text.
    index = new EmbeddedSearchIndex(file);
    await index.updateDocumentFields('d9', { documentTitle: 'shock shock laminar' });
    const latest = await ranking(index);
    expect(latest).not.toEqual(later);
    await index.close();
    fs.writeFileSync(snapshot, stale);
    index = new EmbeddedSearchIndex(file);
    expect(index.stats().lexicalFrom).toBe('caught-up');
    expect(await ranking(index)).toEqual(latest);
    await index.close();
    index = new EmbeddedSearchIndex(file); // the caught-up state was written at the clean close
    expect(index.stats().lexicalFrom).toBe('snapshot');
    expect(await ranking(index)).toEqual(latest);
    await index.close();
    // Truncated, or missing: rebuilt from the chunks' text.
    const good = fs.readFileSync(snapshot);
    fs.writeFileSync(snapshot, good.subarray(0, Math.floor(good.byteLength * 0.7)));
    index = new EmbeddedSearchIndex(file);
    expect(index.stats().lexicalFrom).toBe('text');
    expect(await ranking(index)).toEqual(latest);
    await index.close();
    fs.rmSync(snapshot);
    index = new EmbeddedSearchIndex(file);
    expect(index.stats().lexicalFrom).toBe('text');
    expect(await ranking(index)).toEqual(latest);
    await index.close();
    // Rows changed behind the index's back (same generation): the snapshot does not hold the
    // rows loaded, so it is not used.
    const raw = new Database(file);
    const ids = raw.prepare<[], number>("SELECT id FROM chunks WHERE document_id = 'd3'").pluck().all();
    for (const id of ids) raw.prepare('DELETE FROM chunks_fts WHERE rowid = ?').run(id);
    raw.prepare("DELETE FROM chunks WHERE document_id = 'd3'").run();
    raw.close();
    index = new EmbeddedSearchIndex(file);
    expect(index.stats().lexicalFrom).toBe('text');
    const after = await ranking(index);
    expect(after.join(' ')).not.toContain('d3#');
    expect(latest.join(' ')).toContain('d3#');
    await index.close();
  });

  it('dense kNN over thousands of vectors matches brute force, with filters and deletions', async () => {
    const rand = rng(7);
    const dims = 48; // not a multiple of 32: exercises padding
    const index = new EmbeddedSearchIndex(':memory:');
    const vectors = new Map<string, Float32Array>();
    for (let d = 0; d < 1500; d++) {
      const v = unit(rand, dims);
      vectors.set(`d${d}`, v);
      await index.upsertDocument(`d${d}`, [chunk(d % 3 === 0 ? 'other' : 'w', `d${d}`, 0, v, d % 2 === 0 ? ['even'] : [])]);
    }
    for (let d = 0; d < 1500; d += 10) {
      await index.deleteDocument(`d${d}`);
      vectors.delete(`d${d}`);
    }
    for (let t = 0; t < 5; t++) {
      const q = unit(rand, dims);
      const expected = [...vectors.entries()]
        .filter(([id]) => { const n = Number(id.slice(1)); return n % 3 !== 0 && n % 2 === 0; })
        .map(([id, v]) => ({ id, cos: v.reduce((s, x, i) => s + x * q[i], 0) }))
        .sort((x, y) => y.cos - x.cos)
        .slice(0, 10);
      const hits = await index.search({ text: '', vector: q, filters: { workspaceId: 'w', tags: ['even'] }, k: 10, mode: 'dense' });
      expect(hits.map((h) => h.documentId)).toEqual(expected.map((e) => e.id));
    }
    await index.close();
  });

  it('dense kNN in a small workspace among a large one is exact, after deletions and slot reuse', async () => {
    const rand = rng(11);
    const dims = 40;
    // Few candidates, so that the exact re-scoring cannot hide a wrong int8 scan.
    const index = new EmbeddedSearchIndex(':memory:', { hybrid: { candidates: 30 } });
    const small = new Map<string, Float32Array[]>();
    const upsertSmall = async (id: string): Promise<void> => {
      const vs = [unit(rand, dims), unit(rand, dims)];
      small.set(id, vs);
      await index.upsertDocument(id, vs.map((v, i) => chunk('small', id, i, v)));
    };
    for (let d = 0; d < 3000; d++) {
      await index.upsertDocument(`b${d}`, [chunk('big', `b${d}`, 0, unit(rand, dims))]);
      if (d % 100 === 0) await upsertSmall(`s${d}`);
    }
    // Free slots scattered through the big workspace are reused by the small one.
    for (let d = 1; d < 3000; d += 7) await index.deleteDocument(`b${d}`);
    await index.deleteDocument('s500');
    small.delete('s500');
    for (let d = 0; d < 30; d++) await upsertSmall(`t${d}`);
    await upsertSmall('s100'); // re-upserted: new slots
    const all = [...small.entries()].flatMap(([id, vs]) => vs.map((v, i) => ({ key: `${id}#${i}`, v })));
    for (let t = 0; t < 5; t++) {
      const q = unit(rand, dims);
      const expected = all
        .map(({ key, v }) => ({ key, cos: v.reduce((s, x, i) => s + x * q[i], 0) }))
        .sort((x, y) => y.cos - x.cos)
        .slice(0, 10)
        .map((e) => e.key);
      const hits = await index.search({ text: '', vector: q, filters: { workspaceId: 'small' }, k: 10, mode: 'dense' });
      expect(hits.map((h) => `${h.documentId}#${h.chunkIndex}`)).toEqual(expected);
    }
    expect(await index.search({ text: '', vector: unit(rand, dims), filters: { workspaceId: 'small' }, k: 500, mode: 'dense' })).toHaveLength(all.length);
    await index.close();
  });

  it('pseudo-relevance feedback finds a chunk that shares no word with the query (RM3), and can be turned off', async () => {
    const rand = rng(5);
    const text = (ws: string, id: string, title: string, content: string): IndexedChunk => ({
      workspaceId: ws, documentId: id, documentTitle: title, purpose: 'KNOWLEDGE', tags: [], chunkIndex: 0, content, vector: unit(rand, 8),
    });
    const index = new EmbeddedSearchIndex(':memory:');
    await index.upsertDocument('jet', [text('w', 'jet', 'Jet noise', 'jet exhaust noise from a convergent nozzle at high thrust')]);
    await index.upsertDocument('jet2', [text('w', 'jet2', 'Jet mixing', 'jet mixing layer downstream of the nozzle lip')]);
    await index.upsertDocument('nozzle', [text('w', 'nozzle', 'Nozzle design', 'convergent nozzle contour for maximum thrust')]);
    for (let i = 0; i < 40; i++) {
      await index.upsertDocument(`f${i}`, [text('w', `f${i}`, `Filler ${i}`, `heat transfer in a laminar boundary layer, case ${i}`)]);
    }
    const search = async (): Promise<string[]> =>
      (await index.search({ text: 'jet', filters: { workspaceId: 'w' }, k: 5, mode: 'bm25' })).map((h) => h.documentId);
    expect(await search()).toEqual(expect.arrayContaining(['jet', 'jet2', 'nozzle']));
    const withFeedback = await index.search({ text: 'jet', filters: { workspaceId: 'w' }, k: 5, mode: 'bm25' });
    for (const h of withFeedback) {
      expect(h.score).toBeGreaterThanOrEqual(0);
      expect(h.score).toBeLessThanOrEqual(1);
    }
    expect(withFeedback.find((h) => h.documentId === 'nozzle')!.score).toBeLessThan(withFeedback[0].score);
    index.configure({ prf: { docs: 0 } });
    expect((await search()).sort()).toEqual(['jet', 'jet2']);
    await index.close();
  });

  it('re-scores weighted (feedback) queries with exactly FTS5\'s BM25', async () => {
    const rand = rng(9);
    const words = 'shock wave boundary layer flow heat transfer wing nozzle jet mach pressure the of a in laminar turbulent'.split(' ');
    const index = new EmbeddedSearchIndex(':memory:');
    for (let d = 0; d < 60; d++) {
      const content = Array.from({ length: 5 + Math.floor(rand() * 40) }, () => words[Math.floor(rand() * words.length)]).join(' ');
      await index.upsertDocument(`d${d}`, [{ ...chunk('w', `d${d}`, 0, unit(rand, 8)), documentTitle: `${words[d % words.length]} flows`, content }]);
    }
    type Internals = {
      db: { prepare(sql: string): { all(...p: unknown[]): { id: number; s: number }[] } };
      // The lexical leg (lexicalRanker.ts).
      lexical: {
        originalTerms(text: string): { text: string; stem: string; weight: number; original: boolean }[];
        weightedBm25(ids: number[], terms: unknown[], titleWeight: number): { id: number; s: number }[];
      };
    };
    const internals = index as unknown as Internals;
    const terms = internals.lexical.originalTerms('Shock waves in laminar flows over a wing');
    const fts = internals.db
      .prepare('SELECT rowid AS id, bm25(chunks_fts, 2, 1.0) AS s FROM chunks_fts WHERE chunks_fts MATCH ?')
      .all(terms.map((t) => `"${t.text}"`).join(' OR '));
    expect(fts.length).toBeGreaterThan(20);
    const mine = new Map(internals.lexical.weightedBm25(fts.map((r) => r.id), terms, 2).map((r) => [r.id, r.s]));
    for (const r of fts) expect(mine.get(r.id)).toBeCloseTo(-r.s, 9);
    await index.close();
  });

  it('tag and document filters give the hits and scores of an unfiltered ranking filtered afterwards (BM25)', async () => {
    const rand = rng(21);
    const words = 'shock wave boundary layer flow heat transfer wing nozzle jet mach pressure laminar turbulent'.split(' ');
    const index = new EmbeddedSearchIndex(':memory:');
    index.configure({ prf: { ...index.hybridConfig.prf, docs: 0 } });
    const tagsOf = new Map<string, string[]>();
    const text = (): string => Array.from({ length: 4 + Math.floor(rand() * 12) }, () => words[Math.floor(rand() * words.length)]).join(' ');
    for (let d = 0; d < 800; d++) {
      const id = `d${d}`;
      const tags = ['t1', 't2', 't3'].filter(() => rand() < 0.15);
      tagsOf.set(id, tags);
      // Some documents repeat another's text: equal scores, ordered as an unfiltered query orders them.
      const contents = [text(), d % 7 === 0 ? 'shock wave' : text()];
      await index.upsertDocument(id, contents.map((content, i) => ({ ...chunk('w', id, i, unit(rand, 8), tags), documentTitle: `${words[d % words.length]} notes`, content })));
      if (d % 50 === 0) await index.upsertDocument(`o${d}`, [{ ...chunk('other', `o${d}`, 0, unit(rand, 8), ['t1']), content: text() }]);
    }
    const someDocs = Array.from({ length: 12 }, (_, i) => `d${i * 37}`);
    const filters: { tags?: string[]; documentIds?: string[] }[] = [{ tags: ['t1'] }, { tags: ['t2', 't3'] }, { documentIds: someDocs }, { tags: ['t1'], documentIds: someDocs }];
    const keep = (f: (typeof filters)[number], documentId: string): boolean =>
      (!f.tags || tagsOf.get(documentId)!.some((t) => f.tags!.includes(t))) && (!f.documentIds || f.documentIds.includes(documentId));
    const view = (h: { documentId: string; chunkIndex: number; score: number }): unknown => [h.documentId, h.chunkIndex, h.score];
    for (const q of ['shock wave', 'laminar flow heat', 'nozzle', 'mach pressure jet turbulent', 'wing boundary layer transfer']) {
      const all = await index.search({ text: q, filters: { workspaceId: 'w' }, k: 5000, mode: 'bm25' });
      for (const f of filters) {
        const reference = all.filter((h) => keep(f, h.documentId));
        for (const k of [1, 10, 50]) {
          const hits = await index.search({ text: q, filters: { workspaceId: 'w', ...f }, k, mode: 'bm25' });
          expect(hits.map(view)).toEqual(reference.slice(0, k).map(view));
        }
      }
    }
    await index.close();
  });

  it('the int8 scanner (pairs of rows, odd tails) equals the scalar dot products', () => {
    const memory = createMemory(64);
    const scan = createScanner(memory);
    const rand = rng(44);
    for (const [n, stride] of [[1, 64], [2, 64], [7, 128], [33, 512], [10, 1024]]) {
      const q16 = new Int16Array(memory.buffer, 0, stride);
      const qMax = Math.min(32767, Math.floor(0x7fffffff / (127 * stride))); // as the index quantises: no int32 overflow
      for (let i = 0; i < stride; i++) q16[i] = Math.round((rand() * 2 - 1) * qMax);
      const base = 16384;
      const i8 = new Int8Array(memory.buffer, base, n * stride);
      for (let i = 0; i < i8.length; i++) i8[i] = Math.round((rand() * 2 - 1) * 127);
      const outOff = base + n * stride;
      scan(base, n, stride, 0, outOff);
      const out = new Int32Array(memory.buffer, outOff, n);
      for (let r = 0; r < n; r++) {
        let s = 0;
        for (let j = 0; j < stride; j++) s += i8[r * stride + j] * q16[j];
        expect(out[r]).toBe(s);
      }
    }
  });

  it('a repeated filter sees documents added, retagged and deleted since the last search', async () => {
    const rand = rng(33);
    const index = new EmbeddedSearchIndex(':memory:');
    const tagged = async (): Promise<string[]> =>
      (await index.search({ text: 'wing', vector: unit(rand, 4), filters: { workspaceId: 'w', tags: ['t'] }, k: 10 })).map((h) => h.documentId).sort();
    await index.upsertDocument('a', [{ ...chunk('w', 'a', 0, unit(rand, 4), ['t']), content: 'swept wing' }]);
    await index.upsertDocument('b', [{ ...chunk('w', 'b', 0, unit(rand, 4)), content: 'delta wing' }]);
    expect(await tagged()).toEqual(['a']);
    await index.updateDocumentFields('b', { tags: ['t'] });
    expect(await tagged()).toEqual(['a', 'b']);
    await index.upsertDocument('c', [{ ...chunk('w', 'c', 0, unit(rand, 4), ['t']), content: 'wing flutter' }]);
    expect(await tagged()).toEqual(['a', 'b', 'c']);
    await index.deleteDocument('a');
    expect(await tagged()).toEqual(['b', 'c']);
    expect(await index.countDocuments({ workspaceId: 'w', tags: ['t'] })).toBe(2);
    await index.close();
  });

  it('opens a file of the older layout (interleaved row ids): renumbers chunks by workspace and rebuilds FTS', async () => {
    const file = path.join(dir, 'old-layout.sqlite');
    // The layout before workspace rowid ranges: autoincrement ids, no workspace_numbers, no schema version.
    const old = new Database(file);
    old.exec(`
      CREATE TABLE chunks (id INTEGER PRIMARY KEY, workspace_id TEXT NOT NULL, document_id TEXT NOT NULL, document_title TEXT NOT NULL,
        purpose TEXT NOT NULL, tags TEXT NOT NULL, chunk_index INTEGER NOT NULL, content TEXT NOT NULL, page INTEGER, section TEXT, vector BLOB);
      CREATE VIRTUAL TABLE chunks_fts USING fts5(title, content, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2');
      CREATE TABLE checkpoint (id INTEGER PRIMARY KEY CHECK (id = 1), position INTEGER NOT NULL);
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      INSERT INTO meta VALUES ('dims', '4');
      INSERT INTO checkpoint VALUES (1, 42);
    `);
    const rand = rng(21);
    const ins = old.prepare('INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?)');
    const fts = old.prepare('INSERT INTO chunks_fts(rowid, title, content) VALUES (?, ?, ?)');
    const rows = [
      [1, 'a', 'a1', 'Supersonic inlets', 'shock wave in a supersonic inlet'],
      [2, 'b', 'b1', 'Shock tubes', 'shock tube experiments'],
      [3, 'a', 'a2', 'Heat transfer', 'laminar heat transfer on a flat plate'],
      [4, 'b', 'b2', 'Wings', 'swept wing at transonic speed'],
    ] as const;
    for (const [id, ws, doc, title, content] of rows) {
      const v = unit(rand, 4);
      ins.run(id, ws, doc, title, 'KNOWLEDGE', ws === 'a' ? '["t"]' : '[]', 0, content, Buffer.from(v.buffer));
      fts.run(id, title, content);
    }
    old.close();

    let index = new EmbeddedSearchIndex(file);
    const ids = async (ws: string, text: string, tags?: string[]): Promise<string[]> =>
      (await index.search({ text, filters: { workspaceId: ws, tags }, k: 10, mode: 'bm25' })).map((h) => h.documentId).sort();
    expect(await ids('a', 'shock')).toEqual(['a1']);
    expect(await ids('b', 'shock')).toEqual(['b1']);
    expect(await ids('a', 'heat shock', ['t'])).toEqual(['a1', 'a2']);
    expect(await index.getCheckpoint()).toBe(42);
    // New chunks go to their workspace's range; the file reopens without another migration.
    await index.upsertDocument('a3', [{ ...chunk('a', 'a3', 0, unit(rand, 4)), content: 'oblique shock reflection' }]);
    await index.close();
    index = new EmbeddedSearchIndex(file);
    expect(await ids('a', 'shock')).toEqual(['a1', 'a3']);
    expect(await ids('b', 'shock')).toEqual(['b1']);
    await index.close();
    const check = new Database(file, { readonly: true });
    const byWs = check.prepare('SELECT workspace_id AS ws, min(id) AS lo, max(id) AS hi FROM chunks GROUP BY workspace_id ORDER BY ws').all() as { ws: string; lo: number; hi: number }[];
    expect(byWs[0].hi).toBeLessThan(byWs[1].lo);
    expect(Math.floor(byWs[0].lo / 2 ** 32)).toBe(Math.floor(byWs[0].hi / 2 ** 32));
    expect(check.prepare("SELECT value FROM meta WHERE key = 'schema'").get()).toBeDefined();
    check.close();
  });

  it('rejects vectors of the wrong dimension', async () => {
    const index = new EmbeddedSearchIndex(':memory:');
    const rand = rng(3);
    await index.upsertDocument('d1', [chunk('w', 'd1', 0, unit(rand, 8))]);
    await expect(index.upsertDocument('d2', [chunk('w', 'd2', 0, unit(rand, 9))])).rejects.toThrow(/dimensions/);
    await expect(index.search({ text: 'x', vector: unit(rand, 9), filters: { workspaceId: 'w' }, k: 1 })).rejects.toThrow(/dimensions/);
    await index.close();
  });

  it('a model change survives a restart: the next vectors are kept in the file, the switch after reopening drops the old ones', async () => {
    const file = path.join(dir, 'models.sqlite');
    const rand = rng(17);
    const a = [unit(rand, 12), unit(rand, 12)];
    const b = [unit(rand, 20), unit(rand, 20)];
    let index = new EmbeddedSearchIndex(file);
    await index.upsertDocument('d1', [{ ...chunk('w', 'd1', 0, a[0]), model: 'A' }]);
    await index.upsertDocument('d2', [{ ...chunk('w', 'd2', 0, a[1]), model: 'A' }]);
    await index.beginVectorModel({ modelId: 'B', dimensions: 20 });
    await index.putVectors('d1', 'B', [{ chunkIndex: 0, vector: b[0] }]);
    await index.close();
    index = new EmbeddedSearchIndex(file);
    expect(await index.vectorModels()).toEqual({ active: { modelId: 'A', dimensions: 12 }, next: { modelId: 'B', dimensions: 20, documents: 1 }, documents: 2 });
    expect((await index.search({ text: '', vector: a[1], filters: { workspaceId: 'w' }, k: 1, mode: 'dense', vectorModel: 'A' }))[0].documentId).toBe('d2');
    await index.putVectors('d2', 'B', [{ chunkIndex: 0, vector: b[1] }]);
    await index.switchVectorModel({ modelId: 'B', dimensions: 20 });
    await index.close();
    index = new EmbeddedSearchIndex(file);
    expect(await index.vectorModels()).toEqual({ active: { modelId: 'B', dimensions: 20 }, documents: 2 });
    expect((await index.search({ text: '', vector: b[1], filters: { workspaceId: 'w' }, k: 1, mode: 'dense', vectorModel: 'B' }))[0].documentId).toBe('d2');
    await index.close();
    // Every stored vector names its model; no vector of A is left in the file.
    const check = new Database(file, { readonly: true });
    const rows = check.prepare('SELECT m.model_id AS model, length(c.vector) AS bytes FROM chunks c JOIN vector_models m ON m.num = c.model').all();
    expect(rows).toEqual([{ model: 'B', bytes: 80 }, { model: 'B', bytes: 80 }]);
    expect(check.prepare('SELECT count(*) AS n FROM next_vectors').get()).toEqual({ n: 0 });
    check.close();
  });

  it('a file from before vectors recorded their model: the model is named by its dimensions', async () => {
    const file = path.join(dir, 'unnamed.sqlite');
    const rand = rng(19);
    let index = new EmbeddedSearchIndex(file);
    await index.upsertDocument('d1', [chunk('w', 'd1', 0, unit(rand, 100))]);
    await index.close();
    // Back to the older layout: no model column, no model tables.
    const old = new Database(file);
    old.exec("ALTER TABLE chunks DROP COLUMN model; DROP TABLE vector_models; DROP TABLE next_vectors; DELETE FROM meta WHERE key IN ('model', 'next_model');");
    old.close();
    index = new EmbeddedSearchIndex(file);
    expect((await index.vectorModels()).active).toEqual({ modelId: 'local:glove-sif-100d', dimensions: 100 });
    await index.close();
  });
});
