import { EmbeddedSearchIndex } from '../../src/adapters/embedded/embeddedSearchIndex';
import type { IndexedChunk, SearchHit } from '../../src/ports/searchIndex';
import { mulberry32 as rng } from '../../src/util/random';

/**
 * Fusion takes its cosines from the int8 copies with error bounds and reads the float vectors
 * only of the candidates that could reach the top k. The answer must be exactly the one that
 * exact cosines for every candidate give: same hits, same order, same scores. The corpus is
 * made of near-duplicates (vectors a small step apart, a small vocabulary), so that many
 * candidates' bounds overlap around the k-th score and ties are common.
 */
describe('bounded cosines: the same answer as exact cosines for every candidate', () => {
  const words = 'shock wave boundary layer flow heat transfer wing nozzle jet mach pressure laminar turbulent flutter panel buckling shell'.split(' ');
  const dims = 32;
  const rand = rng(23);
  const unit = (v: Float32Array): Float32Array => {
    const n = Math.hypot(...v);
    return v.map((x) => x / n);
  };
  const centres = Array.from({ length: 6 }, () => unit(Float32Array.from({ length: dims }, () => rand() * 2 - 1)));
  const near = (c: Float32Array, spread: number, r = rand): Float32Array => unit(c.map((x) => x + (r() * 2 - 1) * spread));

  let index: EmbeddedSearchIndex;
  beforeAll(async () => {
    index = new EmbeddedSearchIndex(':memory:');
    for (let d = 0; d < 150; d++) {
      const chunks = Array.from(
        { length: 8 },
        (_, i): IndexedChunk => ({
          workspaceId: d % 10 === 0 ? 'other' : 'w',
          documentId: `d${String(d).padStart(3, '0')}`,
          documentTitle: `${words[d % words.length]} notes`,
          purpose: 'KNOWLEDGE',
          tags: d % 4 === 0 ? ['t'] : [],
          chunkIndex: i,
          content: Array.from({ length: 6 + ((d + i) % 20) }, () => words[Math.floor(rand() * words.length)]).join(' '),
          // Some chunks without a vector, some exact duplicates of another's.
          vector: (d * 8 + i) % 37 === 0 ? new Float32Array(0) : (d * 8 + i) % 29 === 0 ? centres[d % 6] : near(centres[d % 6], d % 3 === 0 ? 0.01 : 0.2),
        }),
      );
      await index.upsertDocument(chunks[0].documentId, chunks);
    }
  });
  afterAll(() => index.close());

  async function answers(): Promise<Pick<SearchHit, 'documentId' | 'chunkIndex' | 'score'>[][]> {
    const out = [];
    const qrand = rng(5);
    for (let q = 0; q < 40; q++) {
      const text = Array.from({ length: 1 + (q % 4) }, () => words[Math.floor(qrand() * words.length)]).join(' ');
      const vector = near(centres[q % 6], q % 2 === 0 ? 0.005 : 0.3, qrand);
      for (const mode of ['hybrid', 'dense'] as const) {
        for (const k of [1, 5, 10, 30]) {
          for (const filters of [{ workspaceId: 'w' }, { workspaceId: 'w', tags: ['t'] }]) {
            const hits = await index.search({ text, vector, filters, k, mode });
            out.push(hits.map((h) => ({ documentId: h.documentId, chunkIndex: h.chunkIndex, score: h.score })));
          }
        }
      }
    }
    return out;
  }

  it.each([
    ['with feedback (the default)', {}],
    ['without feedback', { prf: { docs: 0 } }],
    ['with dense feedback (the query vector changes between passes)', { prf: { denseWeight: 0.3 } }],
    ['with a calibration exponent', { calibrationExponent: 2 }],
  ])('%s', async (_name, overrides) => {
    index.configure(overrides);
    index.tuneCosines({ bounded: false });
    const exact = await answers();
    index.tuneCosines({ bounded: true });
    const bounded = await answers();
    expect(exact.some((hits) => hits.length > 0)).toBe(true);
    expect(bounded).toEqual(exact);
  });
});
