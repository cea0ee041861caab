/**
 * Pseudo-relevance feedback, independent of any index: RM3 expansion of a weighted term
 * query and Rocchio for a query vector. The index supplies its stemmer and document
 * frequencies.
 */
import type { PrfConfig } from './hybrid';
import { isExpansionCandidate, tokens, type WeightedTerm } from './textAnalysis';
import { unitVector } from './unitVector';

/** What RM3 needs from the index: its stems, its document frequencies and its size. */
export interface FeedbackStatistics {
  /** Stems of words ('' for a word with no token), in order. */
  stems(words: string[]): string[];
  /** Number of chunks holding each stem (stems absent from the index may be left out). */
  docFrequencies(stems: string[]): Map<string, number>;
  /** Number of indexed chunks (at least 1). */
  readonly chunks: number;
}

/**
 * RM3: the feedback model P(t|R) = Σ_D P(D) · tf(t, D)/|D| over the feedback chunks
 * (P(D) proportional to the first-pass score), keeping the `terms` most likely terms
 * that are not stopwords, numbers or in more than `maxDocFrequency` of the chunks; the
 * query becomes λ·P(t|Q) + (1 − λ)·P(t|R), scaled so that original terms weigh 1.
 */
export function expandTerms(
  original: WeightedTerm[],
  feedback: { text: string; weight: number }[],
  prf: PrfConfig,
  index: FeedbackStatistics,
): WeightedTerm[] {
  const totalWeight = feedback.reduce((a, f) => a + f.weight, 0);
  if (original.length === 0 || prf.terms <= 0 || totalWeight <= 0) return original;
  const model = new Map<string, { p: number; text: string }>();
  const surfaceModel = new Map<string, number>();
  for (const f of feedback) {
    const toks = tokens(f.text);
    if (toks.length === 0) continue;
    const pd = f.weight / totalWeight / toks.length;
    for (const t of toks) {
      if (!isExpansionCandidate(t)) continue;
      surfaceModel.set(t, (surfaceModel.get(t) ?? 0) + pd);
    }
  }
  const words = [...surfaceModel.keys()];
  const stems = index.stems(words);
  words.forEach((w, i) => {
    const stem = stems[i];
    if (!stem) return;
    const e = model.get(stem);
    const p = surfaceModel.get(w)!;
    if (e) e.p += p;
    else model.set(stem, { p, text: w });
  });
  const ranked = [...model.entries()].sort((a, b) => b[1].p - a[1].p || (a[0] < b[0] ? -1 : 1)).slice(0, prf.terms * 4);
  const df = index.docFrequencies(ranked.map(([stem]) => stem));
  const n = index.chunks;
  const chosen = ranked.filter(([stem]) => (df.get(stem) ?? 0) / n <= prf.maxDocFrequency).slice(0, prf.terms);
  const mass = chosen.reduce((a, [, e]) => a + e.p, 0);
  if (mass <= 0) return original;
  const lambda = Math.min(1, Math.max(1e-6, prf.originalWeight));
  // Weights relative to an original term (λ/|Q| ↦ 1).
  const scale = original.length / lambda;
  const out = new Map(original.map((t) => [t.stem, { ...t }]));
  for (const [stem, e] of chosen) {
    const w = ((1 - lambda) * e.p) / mass * scale;
    const t = out.get(stem);
    if (t) t.weight += w;
    else out.set(stem, { text: e.text, stem, weight: w, original: false });
  }
  return [...out.values()];
}

/** Rocchio: the unit query plus `beta` times the mean of the feedback vectors, normalised. */
export function rocchio(query: Float32Array, vectors: Float32Array[], beta: number): Float32Array {
  if (vectors.length === 0) return query;
  const out = Float32Array.from(query);
  const w = beta / vectors.length;
  for (const v of vectors) {
    for (let i = 0; i < Math.min(out.length, v.length); i++) out[i] += w * v[i];
  }
  return unitVector(out);
}
