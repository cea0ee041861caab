import { DEFAULT_HYBRID_CONFIG, type PrfConfig } from '../../src/search/hybrid';
import { expandTerms, type FeedbackStatistics, rocchio } from '../../src/search/queryFeedback';
import type { WeightedTerm } from '../../src/search/textAnalysis';

/** Stems by dropping a trailing "s"; document frequencies from a table. */
function stats(df: Record<string, number>, chunks = 100): FeedbackStatistics & { stemmed: string[][] } {
  const stemmed: string[][] = [];
  return {
    stemmed,
    chunks,
    stems: (words) => {
      stemmed.push(words);
      return words.map((w) => w.replace(/s$/, ''));
    },
    docFrequencies: (stems) => new Map(stems.filter((s) => df[s] !== undefined).map((s) => [s, df[s]])),
  };
}

const prf: PrfConfig = { ...DEFAULT_HYBRID_CONFIG.prf, terms: 2, originalWeight: 0.5, maxDocFrequency: 0.1 };
const original: WeightedTerm[] = [{ text: 'shock', stem: 'shock', weight: 1, original: true }];

describe('RM3 query expansion', () => {
  it('adds the most likely feedback terms with weights relative to an original term', () => {
    const out = expandTerms(original, [{ text: 'Shock waves, waves and nozzle', weight: 1 }], prf, stats({ wave: 3, nozzle: 2, shock: 5 }));
    // Feedback model: shock 1/5, wave 2/5 (waves ×2), nozzle 1/5 ("and" is a stopword). Top 2: wave, then shock/nozzle tie
    // broken by stem order (nozzle < shock).
    const byStem = new Map(out.map((t) => [t.stem, t]));
    expect([...byStem.keys()]).toEqual(['shock', 'wave', 'nozzle']);
    // λ = 0.5, |Q| = 1: scale 2; mass 3/5; wave (0.5 · 0.4 / 0.6) · 2 = 2/3, nozzle 1/3.
    expect(byStem.get('wave')).toEqual({ text: 'waves', stem: 'wave', weight: expect.closeTo(2 / 3, 12), original: false });
    expect(byStem.get('nozzle')!.weight).toBeCloseTo(1 / 3, 12);
    expect(byStem.get('shock')).toEqual({ text: 'shock', stem: 'shock', weight: 1, original: true });
  });

  it('raises an original term found in the feedback instead of adding it again', () => {
    const out = expandTerms(original, [{ text: 'shocks shock shock', weight: 2 }], { ...prf, terms: 1 }, stats({ shock: 1 }));
    expect(out).toHaveLength(1);
    expect(out[0].weight).toBeCloseTo(2, 12);
    expect(original[0].weight).toBe(1); // not mutated
  });

  it('skips stopwords, numbers, single characters and terms in too many chunks', () => {
    const s = stats({ common: 50, rare: 1 });
    const out = expandTerms(original, [{ text: 'the 1950 x common rare', weight: 1 }], prf, s);
    expect(s.stemmed[0]).toEqual(['common', 'rare']);
    expect(out.map((t) => t.stem)).toEqual(['shock', 'rare']);
  });

  it('returns the query unchanged without feedback, terms or original terms', () => {
    const s = stats({});
    expect(expandTerms(original, [], prf, s)).toBe(original);
    expect(expandTerms(original, [{ text: 'wave', weight: 0 }], prf, s)).toBe(original);
    expect(expandTerms(original, [{ text: 'wave', weight: 1 }], { ...prf, terms: 0 }, s)).toBe(original);
    expect(expandTerms([], [{ text: 'wave', weight: 1 }], prf, s)).toEqual([]);
    expect(expandTerms(original, [{ text: 'the of 42', weight: 1 }], prf, s)).toBe(original);
  });

  it('weights feedback chunks by their score and divides by their length', () => {
    const out = expandTerms(original, [{ text: 'alpha', weight: 3 }, { text: 'beta beta gamma gamma', weight: 1 }], { ...prf, terms: 3 }, stats({}));
    const w = new Map(out.map((t) => [t.stem, t.weight]));
    // P(alpha) = 3/4, P(beta) = P(gamma) = 1/4 · 1/2.
    expect(w.get('alpha')! / w.get('beta')!).toBeCloseTo(6, 12);
    expect(w.get('beta')).toBe(w.get('gamma'));
  });
});

describe('Rocchio', () => {
  it('adds beta times the mean feedback vector and normalises', () => {
    const q = Float32Array.from([1, 0]);
    const out = rocchio(q, [Float32Array.from([0, 1]), Float32Array.from([0, 1])], 1);
    expect(out[0]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(out[1]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(q[1]).toBe(0); // not mutated
  });

  it('returns the query itself without feedback vectors', () => {
    const q = Float32Array.from([0.6, 0.8]);
    expect(rocchio(q, [], 0.5)).toBe(q);
  });
});
