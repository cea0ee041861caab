/**
 * Hybrid ranking: fuses lexical (BM25) and dense (cosine) evidence into one
 * calibrated relevance score in [0, 1].
 *
 * Inputs per candidate chunk (the union of the top BM25 and the top dense hits):
 *  - `cosine`: exact cosine similarity of the query and chunk embeddings, in [-1, 1];
 *  - `lexical`: the chunk's BM25 score divided by the best score any chunk could get
 *    for this query, Σ_t idf(t)·(k1 + 1) over the query terms, so in [0, 1). It is an
 *    IDF-weighted "how much of the query does this chunk contain", comparable across
 *    queries and corpora (raw BM25 is not). 0 when the chunk matches no query term.
 *
 * Formula (method `weighted`, the default):
 *   D = clamp((cosine − dense.low) / (dense.high − dense.low), 0, 1)
 *   L = 1 − exp(−lexical / lexicalScale)
 *   x = denseWeight · D + (1 − denseWeight) · L          (BM25-only: x = L; dense-only: x = D)
 *   score = x^calibrationExponent
 * `dense.low` is the cosine of unrelated text (→ 0) and `dense.high` that of a close
 * paraphrase (→ 1); L saturates as a chunk covers the query's rare terms. The final
 * power maps the blend onto the spec's bands (0.9+ very high, 0.7–0.9 good, 0.5–0.7
 * moderate, < 0.5 low); it is monotone, so it changes no ranking.
 *
 * Method `rrf` (reciprocal-rank fusion, Σ 1/(rrfK + rank)) is available for comparison;
 * it orders by RRF but still reports the calibrated score of each hit, clamped so that
 * scores never increase down the list.
 *
 * Pseudo-relevance feedback (`prf`, on by default in the embedded adapter; the
 * Elasticsearch adapter ignores it): the top `prf.docs` chunks of a first pass in the
 * requested mode are assumed relevant and the query is run again.
 *  - Lexical (RM3): P(t|R) = Σ_D P(D)·tf(t, D)/|D| over those chunks (title + content,
 *    P(D) ∝ first-pass score; stopwords, numbers and terms in more than
 *    `prf.maxDocFrequency` of all chunks excluded); the `prf.terms` most likely terms join
 *    the query with weights λ·P(t|Q) + (1 − λ)·P(t|R), λ = `prf.originalWeight`. The BM25
 *    leg scores Σ_t w_t·bm25_t and `lexical` divides by Σ_t w_t·idf(t)·(k1 + 1), so it stays
 *    in [0, 1) and the bands keep their meaning (the score distribution by relevance grade
 *    on Cranfield is the same with and without feedback).
 *  - Dense (Rocchio): q' = normalise(q + β·mean(feedback vectors)), β = `prf.denseWeight`
 *    (0, off, by default: it lowers dense alone and does not measurably help hybrid with
 *    the local embedding models).
 * The embedded adapter re-ranks a pool with FTS5's own BM25 formula and statistics computed
 * in JS (FTS5's bm25() has no per-term weights, and an FTS5 query over every expanded term
 * would match most of a large index): the head of its first BM25 list (`prf.poolDepth` ×
 * `candidates` rows, already read) and, in BM25-only searches, the top hits of the
 * `prf.newTermQuery` expansion terms of largest weight·idf (one OR query; in hybrid the dense
 * leg brings chunks that share no word with the query). The dense scan and the cosines are
 * reused when the query vector is unchanged. Cost (bench/search.ts, 100k chunks, p50):
 * about +3 ms in hybrid, +13 ms in BM25-only, measured with 5 feedback chunks and 10 terms.
 * 20 terms (issue 13's default) cost more: on a loaded machine (load average 7–10 on 2
 * cores), hybrid+prf minus hybrid in the same run was +7.8 ms with 10 terms and +17.6 ms
 * and +28.9 ms in two runs with 20 (`node --expose-gc dist/bench/search.js --sizes 100000
 * --only '^hybrid(\+prf)?$' --no-embed`); not yet measured on a quiet machine.
 *
 * Defaults (issue 13) were chosen on two collections at once, Cranfield (aeronautics, 225
 * graded queries) and CISI (library science, 76 judged queries; eval/cisi), with the default
 * embedder (GloVe-SIF), by `bench/tune.ts`, which prints each setting's paired difference
 * from the current default with its standard error. nDCG@10 of hybrid+feedback, Cranfield /
 * CISI: before (dense.high 0.8; feedback docs 5, terms 10, λ 0.7) 0.402 / 0.384; now 0.405 /
 * 0.408. What moved CISI is dense.high 0.9 (0.8 → 0.9 alone: 0.401 / 0.408): with GloVe-SIF
 * 52% (Cranfield) and 76% (CISI) of each query's top-10 dense chunks have a cosine above 0.8,
 * and clamping them all to D = 1 threw away the dense leg's ordering among the best
 * candidates. (GloVe-SIF's cosine of unrelated text is far above dense.low: the median over
 * non-relevant chunks is 0.61 on Cranfield, 0.60 on CISI, relevant ones 0.69; raising
 * dense.low to 0.3–0.5 costs Cranfield 0.007–0.015, so D is not 0 for unrelated text.) Feedback from 3 chunks with 20 terms
 * and λ 0.5 then lifts Cranfield (0.401 → 0.405) at no cost on CISI. The same setting also
 * improves USE-lite (0.404 / 0.402 → 0.411 / 0.412) and USE+GloVe (0.403 / 0.414 → 0.408 /
 * 0.416). Honest size of it: the Cranfield gain, +0.003 ± 0.006 (paired SE), is noise, picked
 * from ~90 settings; the CISI gain, +0.025 ± 0.014, is about two standard errors; BM25-only
 * search with feedback loses 0.001 / 0.010 (also noise). The setting is the top of its
 * neighbourhood: terms 10–25, 4 chunks or λ 0.4–0.6 measure 0.398–0.4035 on Cranfield and
 * 0.399–0.407 on CISI, so Cranfield's ≥ 0.404 holds by less than its noise, CISI's gain
 * across the neighbourhood. The fusion weights are flat around
 * the default on both collections (denseWeight 0.3–0.5, lexicalScale 0.15–0.4 stay within
 * about ±0.01 on Cranfield; denseWeight below 0.4 loses 0.01–0.02 on CISI), dense.low
 * 0–0.2 changes little, and RRF loses (Cranfield 0.31, measured with USE-lite before issue 13) because it gives the weak dense ranking
 * as much say as BM25 regardless of evidence. maxDocFrequency 0.1 bounds the postings read per
 * expansion term. The pool was flat when measured before issue 13 (USE-lite, `--k 30`, the
 * API's regime: poolDepth 0.4–3 gave 0.403–0.405), so 0.5 keeps the second pass cheap.
 * FTS5's bm25() fixes k1 = 1.2 and b = 0.75.
 */

export interface HybridConfig {
  method: 'weighted' | 'rrf';
  /** Weight of the dense component; BM25 gets 1 − denseWeight. */
  denseWeight: number;
  /** Constant k of reciprocal-rank fusion. */
  rrfK: number;
  /** Candidates taken from each retriever before fusion (at least k). */
  candidates: number;
  /** BM25 weight of the title column (content has weight 1). */
  titleWeight: number;
  /** Cosine mapped to 0 (unrelated) and to 1 (paraphrase). */
  dense: { low: number; high: number };
  /** Saturation constant of the lexical component. */
  lexicalScale: number;
  /** Exponent of the final monotone calibration. */
  calibrationExponent: number;
  /** Pseudo-relevance feedback (second retrieval pass); adapters that lack it ignore it. */
  prf: PrfConfig;
}

/**
 * Pseudo-relevance feedback: the top `docs` chunks of a first pass (in the requested mode)
 * are taken as relevant and the query is re-run, expanded from them.
 */
export interface PrfConfig {
  /** Feedback chunks taken from the first pass; 0 disables feedback. */
  docs: number;
  /** RM3: expansion terms added to the BM25 query; 0 disables lexical feedback. */
  terms: number;
  /** RM3: weight λ of the original query model; the feedback model gets 1 − λ. */
  originalWeight: number;
  /** Terms found in more than this share of chunks are never expansion terms. */
  maxDocFrequency: number;
  /** Rocchio: weight of the feedback chunks' mean vector added to the unit query vector; 0 disables dense feedback. */
  denseWeight: number;
  /** Head of the first BM25 list re-ranked by the expanded query, in multiples of `candidates` (above 1: the first pass reads deeper). */
  poolDepth: number;
  /**
   * BM25-only searches: the strongest expansion terms whose own top BM25 hits (one OR query)
   * join the re-ranked pool; 0: none. (In hybrid the dense leg brings chunks that share no
   * word with the query.)
   */
  newTermQuery: number;
}

export const DEFAULT_HYBRID_CONFIG: HybridConfig = {
  method: 'weighted',
  denseWeight: 0.4,
  rrfK: 60,
  candidates: 100,
  titleWeight: 2,
  dense: { low: 0.1, high: 0.9 },
  lexicalScale: 0.25,
  calibrationExponent: 1,
  prf: { docs: 3, terms: 20, originalWeight: 0.5, maxDocFrequency: 0.1, denseWeight: 0, poolDepth: 0.5, newTermQuery: 3 },
};

/** Partial configuration; nested groups may be partial too. */
export type HybridOverrides = Partial<Omit<HybridConfig, 'dense' | 'prf'>> & {
  dense?: Partial<HybridConfig['dense']>;
  prf?: Partial<PrfConfig>;
};

export function resolveHybridConfig(partial?: HybridOverrides): HybridConfig {
  return {
    ...DEFAULT_HYBRID_CONFIG,
    ...partial,
    dense: { ...DEFAULT_HYBRID_CONFIG.dense, ...partial?.dense },
    prf: { ...DEFAULT_HYBRID_CONFIG.prf, ...partial?.prf },
  };
}

export interface Candidate<K> {
  key: K;
  /** Exact cosine similarity; undefined when the query has no vector. */
  cosine?: number;
  /** Normalised BM25 in [0, 1); 0 or undefined when no query term matches. */
  lexical?: number;
  /** 0-based rank in the BM25 list, if the candidate came from it. */
  lexicalRank?: number;
  /** 0-based rank in the dense list, if the candidate came from it. */
  denseRank?: number;
}

export interface Fused<K> {
  key: K;
  score: number;
}

export type RankMode = 'hybrid' | 'bm25' | 'dense';

const clamp01 = (x: number): number => (x <= 0 || Number.isNaN(x) ? 0 : x >= 1 ? 1 : x);

export function denseComponent(cosine: number | undefined, cfg: HybridConfig): number {
  if (cosine === undefined) return 0;
  return clamp01((cosine - cfg.dense.low) / (cfg.dense.high - cfg.dense.low));
}

export function lexicalComponent(lexical: number | undefined, cfg: HybridConfig): number {
  if (!lexical || lexical <= 0) return 0;
  return clamp01(1 - Math.exp(-lexical / cfg.lexicalScale));
}

/** Calibrated score of one candidate under a ranking mode. */
export function calibratedScore<K>(c: Candidate<K>, mode: RankMode, cfg: HybridConfig): number {
  return calibratedScoreOf(c.cosine, c.lexical, mode, cfg);
}

/** Calibrated score of a cosine and a lexical score (as of a candidate that has them). */
export function calibratedScoreOf(cosine: number | undefined, lexical: number | undefined, mode: RankMode, cfg: HybridConfig): number {
  const d = denseComponent(cosine, cfg);
  const l = lexicalComponent(lexical, cfg);
  let x: number;
  if (mode === 'bm25' || cosine === undefined) x = l;
  else if (mode === 'dense') x = d;
  else x = cfg.denseWeight * d + (1 - cfg.denseWeight) * l;
  return clamp01(Math.pow(x, cfg.calibrationExponent));
}

/**
 * Ranks candidates and returns the top `k` with calibrated scores, highest first.
 * Ties are broken by cosine, then lexical evidence, then the order of `candidates`.
 */
export function fuse<K>(candidates: Candidate<K>[], k: number, mode: RankMode, cfg: HybridConfig): Fused<K>[] {
  const scored = candidates.map((c, i) => ({ c, i, score: calibratedScore(c, mode, cfg) }));
  if (mode === 'hybrid' && cfg.method === 'rrf') {
    const rrf = (c: Candidate<K>): number =>
      (c.lexicalRank !== undefined ? 1 / (cfg.rrfK + c.lexicalRank + 1) : 0) +
      (c.denseRank !== undefined ? 1 / (cfg.rrfK + c.denseRank + 1) : 0);
    scored.sort((a, b) => rrf(b.c) - rrf(a.c) || b.score - a.score || a.i - b.i);
    const out = scored.slice(0, Math.max(0, k)).map((s) => ({ key: s.c.key, score: s.score }));
    for (let i = 1; i < out.length; i++) out[i].score = Math.min(out[i].score, out[i - 1].score);
    return out;
  }
  // Below the calibration floor scores tie at 0; raw evidence still orders them.
  scored.sort((a, b) => b.score - a.score || (b.c.cosine ?? 0) - (a.c.cosine ?? 0) || (b.c.lexical ?? 0) - (a.c.lexical ?? 0) || a.i - b.i);
  return scored.slice(0, Math.max(0, k)).map((s) => ({ key: s.c.key, score: s.score }));
}
