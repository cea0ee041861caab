import { calibratedScore, type Candidate, DEFAULT_HYBRID_CONFIG, fuse, resolveHybridConfig } from '../../src/search/hybrid';

const cfg = DEFAULT_HYBRID_CONFIG;

describe('hybrid fusion and calibration', () => {
  it('maps evidence into the spec bands', () => {
    // Paraphrase-level cosine and full lexical coverage: very high.
    expect(calibratedScore({ key: 1, cosine: 0.95, lexical: 0.9 }, 'hybrid', cfg)).toBeGreaterThanOrEqual(0.9);
    // Unrelated text: low.
    expect(calibratedScore({ key: 1, cosine: 0.05, lexical: 0 }, 'hybrid', cfg)).toBeLessThan(0.1);
    expect(calibratedScore({ key: 1, cosine: 0.3, lexical: 0.02 }, 'hybrid', cfg)).toBeLessThan(0.5);
    // Scores stay within [0, 1] for any input.
    for (const cosine of [-1, -0.2, 0, 0.5, 1, 1.2]) {
      for (const lexical of [0, 0.1, 0.5, 1, 3]) {
        const s = calibratedScore({ key: 1, cosine, lexical }, 'hybrid', cfg);
        expect(s).toBeGreaterThanOrEqual(0);
        expect(s).toBeLessThanOrEqual(1);
      }
    }
  });

  it('is monotone in each kind of evidence', () => {
    let prev = -1;
    for (let cos = 0; cos <= 1; cos += 0.05) {
      const s = calibratedScore({ key: 1, cosine: cos, lexical: 0.2 }, 'hybrid', cfg);
      expect(s).toBeGreaterThanOrEqual(prev);
      prev = s;
    }
    prev = -1;
    for (let lex = 0; lex <= 1; lex += 0.05) {
      const s = calibratedScore({ key: 1, cosine: 0.4, lexical: lex }, 'hybrid', cfg);
      expect(s).toBeGreaterThanOrEqual(prev);
      prev = s;
    }
  });

  it('uses only the evidence of the requested mode', () => {
    const c = { key: 1, cosine: cfg.dense.high, lexical: 0 }; // a paraphrase's cosine: D = 1
    expect(calibratedScore(c, 'bm25', cfg)).toBe(0);
    expect(calibratedScore(c, 'dense', cfg)).toBe(1);
    expect(calibratedScore({ key: 1, lexical: 0.5 }, 'hybrid', cfg)).toBe(calibratedScore({ key: 1, lexical: 0.5 }, 'bm25', cfg));
  });

  it('fuses: a chunk strong on both signals beats chunks strong on one', () => {
    const cands: Candidate<string>[] = [
      { key: 'lexical-only', cosine: 0.1, lexical: 0.6, lexicalRank: 0 },
      { key: 'dense-only', cosine: 0.7, lexical: 0, denseRank: 0 },
      { key: 'both', cosine: 0.6, lexical: 0.5, lexicalRank: 1, denseRank: 1 },
    ];
    const out = fuse(cands, 3, 'hybrid', cfg);
    expect(out[0].key).toBe('both');
    for (let i = 1; i < out.length; i++) expect(out[i].score).toBeLessThanOrEqual(out[i - 1].score);
    expect(fuse(cands, 3, 'bm25', cfg).map((f) => f.key)).toEqual(['lexical-only', 'both', 'dense-only']);
    expect(fuse(cands, 3, 'dense', cfg).map((f) => f.key)).toEqual(['dense-only', 'both', 'lexical-only']);
    expect(fuse(cands, 1, 'hybrid', cfg)).toHaveLength(1);
    expect(fuse(cands, 0, 'hybrid', cfg)).toEqual([]);
  });

  it('weights change the balance', () => {
    const cands: Candidate<string>[] = [
      { key: 'lexical', cosine: 0.2, lexical: 0.6 },
      { key: 'dense', cosine: 0.75, lexical: 0.05 },
    ];
    expect(fuse(cands, 1, 'hybrid', resolveHybridConfig({ denseWeight: 0.1 }))[0].key).toBe('lexical');
    expect(fuse(cands, 1, 'hybrid', resolveHybridConfig({ denseWeight: 0.9 }))[0].key).toBe('dense');
  });

  it('orders ties below the calibration floor by raw cosine', () => {
    const cands: Candidate<string>[] = [
      { key: 'a', cosine: 0.01 },
      { key: 'b', cosine: 0.05 },
      { key: 'c', cosine: -0.3 },
    ];
    expect(fuse(cands, 3, 'dense', cfg).map((f) => f.key)).toEqual(['b', 'a', 'c']);
  });

  it('rrf orders by reciprocal rank and keeps scores non-increasing', () => {
    const rrf = resolveHybridConfig({ method: 'rrf', rrfK: 60 });
    const cands: Candidate<string>[] = [
      { key: 'x', cosine: 0.9, lexical: 0.9, lexicalRank: 5 },
      { key: 'y', cosine: 0.2, lexical: 0.1, lexicalRank: 0, denseRank: 0 },
      { key: 'z', cosine: 0.5, lexical: 0.3, denseRank: 1 },
    ];
    const out = fuse(cands, 3, 'hybrid', rrf);
    expect(out.map((f) => f.key)).toEqual(['y', 'z', 'x']);
    for (let i = 1; i < out.length; i++) expect(out[i].score).toBeLessThanOrEqual(out[i - 1].score);
  });

  it('resolves partial nested configuration (dense, prf) over the defaults', () => {
    const c = resolveHybridConfig({ prf: { docs: 0 }, dense: { low: 0.2 } });
    expect(c.prf).toEqual({ ...DEFAULT_HYBRID_CONFIG.prf, docs: 0 });
    expect(c.dense).toEqual({ ...DEFAULT_HYBRID_CONFIG.dense, low: 0.2 });
    expect(c.denseWeight).toBe(DEFAULT_HYBRID_CONFIG.denseWeight);
    // Feedback is on by default: RM3 from the first pass's top chunks.
    expect(DEFAULT_HYBRID_CONFIG.prf.docs).toBeGreaterThan(0);
    expect(DEFAULT_HYBRID_CONFIG.prf.terms).toBeGreaterThan(0);
  });
});
