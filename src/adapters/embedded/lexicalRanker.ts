/**
 * The lexical leg of the embedded index: BM25 candidates from FTS5, re-scored in JS with
 * FTS5's own formula and statistics when the query's terms are weighted (feedback), the
 * feedback's expansion terms (RM3, src/search/queryFeedback.ts) and the normalisation by
 * the best score the query could reach.
 */
import type { SearchFilters } from '../../ports/searchIndex';
import type { PrfConfig } from '../../search/hybrid';
import { expandTerms, type FeedbackStatistics } from '../../search/queryFeedback';
import { queryTerms, toMatchExpression, wordsOf, type WeightedTerm } from '../../search/textAnalysis';
import type { Scope } from './documentCatalog';
import { WS_SPAN } from './schema';
import type { StatementCache } from './statements';
import { CACHE_LIMIT, type Stemmer } from './stemmer';

import { BM25_B, BM25_K1, type LexicalIndex } from './lexicalIndex';

export { BM25_B, BM25_K1 };
/** SQL function: whether a chunk row is in the scope of the filtered query running. */
const IN_SCOPE_FN = 'kb_in_scope';

/** What the ranker needs of the in-memory rows (the vector slab). */
export interface LexicalCorpus {
  /** Chunks held in memory. */
  readonly liveCount: number;
  /** Vector dimensions; 0 while the rows are not held in memory yet. */
  readonly dims: number;
  /** Chunk writes so far (the document-frequency cache is refreshed as they accumulate). */
  readonly writes: number;
  /** Whether the row is held and its document is in the mask. */
  inScope(rowId: number, mask: Uint8Array): boolean;
}

/** A chunk's text, as read for re-scoring or feedback. */
export interface ChunkText {
  id: number;
  document_title: string;
  content: string;
}

export class LexicalRanker implements FeedbackStatistics {
  private readonly dfCache = new Map<string, number>();
  /** Corpus writes when the document-frequency cache was started. */
  private dfCacheWrites = -Infinity;

  /** Re-score the feedback pass from the chunks' text even when the in-memory index could (benchmarks: the way before). */
  feedbackFromText = false;

  /** The scope's mask while a filtered query runs (read by the SQL function IN_SCOPE_FN). */
  private activeMask: Uint8Array | undefined;

  constructor(
    private readonly statements: StatementCache,
    private readonly stemmer: Stemmer,
    private readonly corpus: LexicalCorpus,
    /** The in-memory BM25 of every indexed chunk, when the index holds one (else FTS5 ranks). */
    private readonly index?: LexicalIndex,
  ) {
    statements.db.function(IN_SCOPE_FN, { deterministic: false }, (rowId: unknown) =>
      this.activeMask !== undefined && typeof rowId === 'number' && this.corpus.inScope(rowId, this.activeMask) ? 1 : 0,
    );
  }

  /** Number of indexed chunks, at least 1 (the N of IDF). */
  get chunks(): number {
    return Math.max(1, this.corpus.liveCount);
  }

  stems(words: string[]): string[] {
    return this.stemmer.stems(words);
  }

  /** Forgets the document frequencies (the index was emptied). */
  clear(): void {
    this.dfCache.clear();
  }

  /** The query's own terms, weight 1 each (merged by stem). */
  originalTerms(text: string): WeightedTerm[] {
    const words = queryTerms(text);
    const stems = this.stemmer.stems(words);
    const out = new Map<string, WeightedTerm>();
    words.forEach((w, i) => {
      const stem = stems[i];
      if (stem && !out.has(stem)) out.set(stem, { text: w, stem, weight: 1, original: true });
    });
    return [...out.values()];
  }

  /** The terms expanded by RM3 from feedback chunks' text. */
  expand(original: WeightedTerm[], feedback: { text: string; weight: number }[], prf: PrfConfig, workspace?: number): WeightedTerm[] {
    return expandTerms(original, feedback, prf, workspace === undefined ? this : this.statisticsOf(workspace));
  }

  /** The feedback statistics of one workspace alone (never other workspaces' text). */
  statisticsOf(workspace: number): FeedbackStatistics {
    return {
      stems: (words) => this.stems(words),
      docFrequencies: (stems) => this.docFrequencies(stems, workspace),
      chunks: this.rowsOf(workspace),
    };
  }

  /** BM25's N for a workspace: its live chunks when the in-memory index ranks, else the whole index's (FTS5). */
  private rowsOf(workspace?: number): number {
    return this.index && workspace !== undefined ? this.index.statsOf(workspace).rows : Math.max(1, this.corpus.liveCount);
  }

  /**
   * Rows matching the terms within the filters, best BM25 first, with normalised scores.
   * Weighted terms (feedback) re-rank `pool` plus the top rows of the `newTerms` strongest
   * expansion terms; `known` holds rows already read.
   */
  candidates(
    terms: WeightedTerm[],
    filters: SearchFilters,
    scope: Scope,
    m: number,
    titleWeight: number,
    pool: number[] = [],
    known?: ReadonlyMap<number, ChunkText>,
    newTerms = 0,
  ): { id: number; lexical: number }[] {
    if (terms.length === 0 || scope.chunks === 0) return [];
    const lo = scope.workspace * WS_SPAN;
    const hi = lo + WS_SPAN - 1;
    const w0 = terms[0].weight;
    const uniform = terms.every((t) => t.weight === w0);
    let rows: { id: number; s: number }[];
    if (uniform) {
      // Equal weights: one OR query, ranked and limited by FTS5.
      const match = toMatchExpression(terms.map((t) => t.text));
      if (this.index) {
        // Exact BM25 over every match of the workspace, in memory (lexicalIndex.ts); the
        // scope's mask is applied before the top m are kept.
        rows = this.index.top(scope.workspace, terms.map((t) => t.stem), titleWeight, scope.mask, m, this.averages(scope.workspace)).map((r) => ({ id: r.id, s: -r.s }));
      } else if (this.corpus.dims > 0) {
        // Rank in FTS5 alone within the workspace's rowid range (no per-match join) and
        // filter with the in-memory mask, reading deeper until m rows pass.
        if (scope.chunks >= scope.workspaceChunks) {
          const stmt = this.statements.get<[string, number, number, number], { id: number; s: number }>(
            `SELECT rowid AS id, bm25(chunks_fts, ${titleWeight}, 1.0) AS s FROM chunks_fts
             WHERE chunks_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY s LIMIT ?`,
          );
          rows = stmt.all(match, lo, hi, Math.ceil(m * 1.5) + 10).slice(0, m);
        } else {
          // A filter (tags, documents, purpose): matches outside the scope are dropped by the
          // WHERE clause before bm25() scores them (FTS5's per-row cost: position lists and
          // the row's length) and before the sort, so only the scope's matches are ranked.
          // bm25()'s statistics (row count, average length, each term's document frequency)
          // are the whole index's either way, so the scores are those of an unfiltered query.
          const stmt = this.statements.get<[string, number, number, number], { id: number; s: number }>(
            `SELECT rowid AS id, bm25(chunks_fts, ${titleWeight}, 1.0) AS s FROM chunks_fts
             WHERE chunks_fts MATCH ? AND rowid BETWEEN ? AND ? AND ${IN_SCOPE_FN}(rowid) ORDER BY s LIMIT ?`,
          );
          this.activeMask = scope.mask;
          try {
            rows = stmt.all(match, lo, hi, m);
          } finally {
            this.activeMask = undefined;
          }
        }
      } else {
        // Chunks without vectors before any vector fixed the dimensions are not in memory.
        rows = this.join(match, filters, m, titleWeight, lo, hi);
      }
      rows = rows.map((r) => ({ id: r.id, s: -r.s * w0 }));
    } else {
      // Weighted query (feedback): FTS5's bm25() has no per-term weights. The pool, the first
      // pass's deeper lexical hits plus the top rows of the few strongest expansion terms
      // (chunks that share no word with the query), is re-scored here with FTS5's BM25 formula
      // and statistics and the terms' weights: from the in-memory postings (a look-up per
      // chunk and term, the same scores) rather than by reading and tokenizing the pool's text
      // (at 100k chunks, 1.8 ms of CPU less per default search: bench/search.ts, before/after). (An FTS5 query over every expanded term would
      // match most of a large index: too slow.)
      const ids = new Set(pool);
      // Strongest = largest possible contribution, weight · idf (rarer terms also have
      // shorter posting lists, so the query stays cheap).
      const df = this.docFrequencies(terms.map((t) => t.stem), scope.workspace);
      const n = this.rowsOf(scope.workspace);
      const reach = (t: WeightedTerm): number => {
        const d = df.get(t.stem) ?? 0;
        return t.weight * Math.max(1e-6, Math.log((n - d + 0.5) / (d + 0.5)));
      };
      const strongest = terms
        .filter((t) => !t.original)
        .sort((a, b) => reach(b) - reach(a))
        .slice(0, Math.max(0, Math.floor(newTerms)))
        .map((t) => ({ ...t, weight: 1 }));
      if (strongest.length > 0) for (const r of this.candidates(strongest, filters, scope, m, titleWeight)) ids.add(r.id);
      // From the in-memory postings when the index holds them (same scores, no text read).
      rows = (this.index && !this.feedbackFromText ? this.index.scoreRows(scope.workspace, [...ids], terms, titleWeight, this.averages(scope.workspace)) : this.weightedBm25([...ids], terms, titleWeight, known, scope.workspace))
        .sort((a, b) => b.s - a.s || a.id - b.id)
        .slice(0, m);
    }
    if (rows.length === 0) return [];
    // Normalised by the best score the weighted query could reach: expansion terms take a
    // share of the evidence instead of adding to it, so scores keep their bands with feedback.
    const best = this.maxBm25(terms, scope.workspace);
    return rows.map((r) => ({ id: r.id, lexical: best > 0 ? Math.min(1, r.s / best) : 0 }));
  }

  /**
   * FTS5's BM25 (k1 = 1.2, b = 0.75, column-weighted frequencies, IDF and average length
   * over `workspace`'s rows when the in-memory index holds them, else over the whole index) of
   * the given rows for weighted terms, computed here from the rows' text with FTS5's stemmer;
   * positive, higher is better.
   */
  weightedBm25(ids: number[], terms: WeightedTerm[], titleWeight: number, known?: ReadonlyMap<number, ChunkText>, workspace?: number): { id: number; s: number }[] {
    if (ids.length === 0) return [];
    const { rows: n, avgLength } = this.averages(workspace);
    const df = this.docFrequencies(terms.map((t) => t.stem), workspace);
    const termOf = new Map(terms.map((t, i) => [t.stem, i]));
    const weight = terms.map((t) => t.weight);
    const idf = terms.map((t) => Math.max(Math.log((n - (df.get(t.stem) ?? 0) + 0.5) / ((df.get(t.stem) ?? 0) + 0.5)), 1e-6));
    const texts: ChunkText[] = [];
    const missing: number[] = [];
    for (const id of ids) {
      const r = known?.get(id);
      if (r) texts.push(r);
      else missing.push(id);
    }
    if (missing.length > 0) {
      texts.push(
        ...this.statements.get<[string], ChunkText>('SELECT id, document_title, content FROM chunks WHERE id IN (SELECT value FROM json_each(?))')
          .all(JSON.stringify(missing)),
      );
    }
    // Each distinct word is mapped once to the index of the query term its stem is (-1: none);
    // words not stemmed yet are counted after one batched stemming call.
    const termOfWord = new Map<string, number>();
    const pending: { row: number; word: string; w: number }[] = [];
    const freq = new Float64Array(texts.length * terms.length);
    const lengths = new Float64Array(texts.length);
    const count = (text: string, row: number, w: number): void => {
      const words = wordsOf(text);
      lengths[row] += words.length;
      for (const word of words) {
        let i = termOfWord.get(word);
        if (i === undefined) {
          const stem = this.stemmer.cached(word);
          if (stem === undefined) {
            pending.push({ row, word, w });
            continue;
          }
          i = termOf.get(stem) ?? -1;
          termOfWord.set(word, i);
        }
        if (i >= 0) freq[row * terms.length + i] += w;
      }
    };
    texts.forEach((r, row) => {
      count(r.document_title, row, titleWeight);
      count(r.content, row, 1);
    });
    if (pending.length > 0) {
      const words = [...new Set(pending.map((p) => p.word))];
      this.stemmer.stems(words).forEach((stem, i) => termOfWord.set(words[i], termOf.get(stem) ?? -1));
      for (const p of pending) {
        const i = termOfWord.get(p.word)!;
        if (i >= 0) freq[p.row * terms.length + i] += p.w;
      }
    }
    return texts.map((r, row) => {
      const norm = BM25_K1 * (1 - BM25_B + (BM25_B * lengths[row]) / avgLength);
      let s = 0;
      for (let i = 0; i < terms.length; i++) {
        const f = freq[row * terms.length + i];
        if (f > 0) s += weight[i] * idf[i] * ((f * (BM25_K1 + 1)) / (f + norm));
      }
      return { id: r.id, s };
    });
  }

  /**
   * BM25's row count and average row length in tokens: the in-memory index's, over the rows
   * it holds; without one, FTS5's "averages" record (which counts deleted rows too).
   */
  private averages(workspace?: number): { rows: number; avgLength: number } {
    if (this.index) return workspace === undefined ? this.index.stats : this.index.statsOf(workspace);
    const rec = this.statements.get<[], { block: Buffer }>('SELECT block FROM chunks_fts_data WHERE id = 1').get();
    if (!rec) return { rows: Math.max(1, this.corpus.liveCount), avgLength: 1 };
    return decodeAverages(rec.block);
  }

  /** BM25 with the filters applied in SQL (small scopes); m < 0: no limit. */
  private join(match: string, filters: SearchFilters, m: number, titleWeight: number, lo: number, hi: number): { id: number; s: number }[] {
    const where: string[] = ['chunks_fts MATCH ?', 'chunks_fts.rowid BETWEEN ? AND ?', 'c.workspace_id = ?'];
    const params: (string | number)[] = [match, lo, hi, filters.workspaceId];
    if (filters.purpose) {
      where.push('c.purpose = ?');
      params.push(filters.purpose);
    }
    if (filters.documentIds) {
      where.push('c.document_id IN (SELECT value FROM json_each(?))');
      params.push(JSON.stringify(filters.documentIds));
    }
    if (filters.tags) {
      where.push('EXISTS (SELECT 1 FROM json_each(c.tags) t WHERE t.value IN (SELECT value FROM json_each(?)))');
      params.push(JSON.stringify(filters.tags));
    }
    params.push(m);
    return this.statements.get<(string | number)[], { id: number; s: number }>(
        `SELECT c.id AS id, bm25(chunks_fts, ${titleWeight}, 1.0) AS s
         FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
         WHERE ${where.join(' AND ')} ORDER BY s LIMIT ?`,
      )
      .all(...params);
  }

  /**
   * Number of chunks containing each stem: the in-memory index's counts when there is one,
   * else FTS5's (fts5vocab counts by reading the term's whole
   * posting list, so counts are cached until chunk writes reach 1 % of the index.
   */
  docFrequencies(stems: string[], workspace?: number): Map<string, number> {
    if (this.index) {
      // Exact and current: the in-memory index keeps them (a workspace's own, when one is named).
      const out = new Map<string, number>();
      for (const t of stems) {
        const df = workspace === undefined ? this.index.docFrequency(t) : this.index.docFrequencyIn(workspace, t);
        if (df > 0) out.set(t, df);
      }
      return out;
    }
    if (this.corpus.writes - this.dfCacheWrites > this.corpus.liveCount * 0.01 || this.dfCache.size > CACHE_LIMIT) {
      this.dfCache.clear();
      this.dfCacheWrites = this.corpus.writes;
    }
    const missing = [...new Set(stems.filter((t) => !this.dfCache.has(t)))];
    if (missing.length > 0) {
      const rows = this.statements.get<[string], { term: string; doc: number }>('SELECT term, doc FROM chunks_vocab WHERE term IN (SELECT value FROM json_each(?))')
        .all(JSON.stringify(missing));
      for (const t of missing) this.dfCache.set(t, 0);
      for (const r of rows) this.dfCache.set(r.term, r.doc);
    }
    const out = new Map<string, number>();
    for (const t of stems) {
      const df = this.dfCache.get(t)!;
      if (df > 0) out.set(t, df);
    }
    return out;
  }

  /**
   * Upper bound of FTS5's BM25 for these terms, Σ w·idf·(k1 + 1): each term's contribution
   * idf·tf·(k1 + 1)/(tf + k1·(1 − b + b·len/avg)) stays below idf·(k1 + 1) whatever the
   * (column-weighted) frequency tf. IDF uses FTS5's formula over all indexed chunks.
   */
  maxBm25(terms: WeightedTerm[], workspace?: number): number {
    const df = this.docFrequencies(terms.map((t) => t.stem), workspace);
    const n = this.rowsOf(workspace);
    let sum = 0;
    for (const t of terms) {
      const doc = df.get(t.stem);
      if (doc === undefined) continue;
      const idf = Math.log((n - doc + 0.5) / (doc + 0.5));
      sum += t.weight * Math.max(idf, 1e-6);
    }
    return sum * (BM25_K1 + 1);
  }
}

/**
 * FTS5's "averages" record: SQLite varints (big-endian 7-bit groups, the ninth byte carries
 * 8 bits), the row count then each column's token total; gives the row count and the
 * average row length in tokens (all columns).
 */
export function decodeAverages(block: Uint8Array): { rows: number; avgLength: number } {
  const values: number[] = [];
  let i = 0;
  while (i < block.length) {
    let v = 0;
    for (let j = 0; j < 9 && i < block.length; j++) {
      const byte = block[i++];
      if (j === 8) {
        v = v * 256 + byte;
        break;
      }
      v = v * 128 + (byte & 0x7f);
      if ((byte & 0x80) === 0) break;
    }
    values.push(v);
  }
  const rows = Math.max(1, values[0] ?? 1);
  const tokens = values.slice(1).reduce((a, b) => a + b, 0);
  return { rows, avgLength: Math.max(1e-9, tokens / rows) };
}
