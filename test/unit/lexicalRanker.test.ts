import Database from 'better-sqlite3';
import { decodeAverages, LexicalRanker, type LexicalCorpus } from '../../src/adapters/embedded/lexicalRanker';
import { openIndexDatabase, WS_SPAN } from '../../src/adapters/embedded/schema';
import { StatementCache } from '../../src/adapters/embedded/statements';
import { Stemmer } from '../../src/adapters/embedded/stemmer';
import type { Scope } from '../../src/adapters/embedded/documentCatalog';
import { DEFAULT_HYBRID_CONFIG } from '../../src/search/hybrid';
import { mulberry32 as rng } from '../../src/util/random';

const WORDS = 'shock wave waves boundary layer flow flows heat transfer wing nozzle jet mach pressure the of a in laminar turbulent'.split(' ');

/** An index file with `n` chunks in workspace 1 (one per document, document d = row d), no vectors. */
function setup(n: number, seed = 5): { db: Database.Database; ranker: LexicalRanker; corpus: LexicalCorpus & { writes: number; liveCount: number }; stemmer: Stemmer; scope: Scope } {
  const db = openIndexDatabase(':memory:');
  const rand = rng(seed);
  const ins = db.prepare(`INSERT INTO chunks (id, workspace_id, document_id, document_title, purpose, tags, chunk_index, content)
    VALUES (?, 'w', ?, ?, 'KNOWLEDGE', '[]', 0, ?)`);
  const fts = db.prepare('INSERT INTO chunks_fts(rowid, title, content) VALUES (?, ?, ?)');
  for (let d = 0; d < n; d++) {
    const content = Array.from({ length: 5 + Math.floor(rand() * 40) }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
    const title = `${WORDS[d % WORDS.length]} flows`;
    ins.run(WS_SPAN + d, `d${d}`, title, content);
    fts.run(WS_SPAN + d, title, content);
  }
  const corpus = {
    liveCount: n,
    dims: 8,
    writes: 0,
    inScope: (rowId: number, mask: Uint8Array): boolean => mask[rowId - WS_SPAN] === 1,
  };
  const statements = new StatementCache(db);
  const stemmer = new Stemmer(statements);
  const mask = new Uint8Array(n).fill(1);
  const scope: Scope = { mask, docs: Array.from({ length: n }, (_, d) => d), chunks: n, workspace: 1, workspaceChunks: n };
  return { db, ranker: new LexicalRanker(statements, stemmer, corpus), corpus, stemmer, scope };
}

describe('Stemmer', () => {
  it('stems with FTS5\'s porter tokenizer, caches, and gives \'\' for words without a token', () => {
    const { stemmer, db } = setup(1);
    expect(stemmer.cached('waves')).toBeUndefined();
    expect(stemmer.stems(['waves', 'flowing', 'Über', '--', 'waves'])).toEqual(['wave', 'flow', 'uber', '', 'wave']);
    expect(stemmer.cached('waves')).toBe('wave');
    expect(stemmer.cached('--')).toBe('');
    expect(db.prepare('SELECT count(*) FROM temp.query_tokens').pluck().get()).toBe(0);
    db.close();
  });
});

describe('LexicalRanker', () => {
  const titleWeight = 2;

  it('weighted BM25 with equal weights is exactly FTS5\'s bm25()', () => {
    const { db, ranker } = setup(60);
    const terms = ranker.originalTerms('Shock waves in laminar flows over a wing');
    expect(terms.map((t) => t.stem)).toEqual(['shock', 'wave', 'laminar', 'flow', 'wing']);
    const fts = db.prepare<[string], { id: number; s: number }>('SELECT rowid AS id, bm25(chunks_fts, 2, 1.0) AS s FROM chunks_fts WHERE chunks_fts MATCH ?')
      .all(terms.map((t) => `"${t.text}"`).join(' OR '));
    expect(fts.length).toBeGreaterThan(20);
    const mine = new Map(ranker.weightedBm25(fts.map((r) => r.id), terms, titleWeight).map((r) => [r.id, r.s]));
    for (const r of fts) expect(mine.get(r.id)).toBeCloseTo(-r.s, 9);
    db.close();
  });

  it('per-term weights scale each term\'s contribution', () => {
    const { db, ranker } = setup(60);
    const [shock, wing] = ranker.originalTerms('shock wing');
    const ids = db.prepare<[], number>('SELECT id FROM chunks').pluck().all();
    const one = (t: typeof shock): Map<number, number> => new Map(ranker.weightedBm25(ids, [t], titleWeight).map((r) => [r.id, r.s]));
    const s = one(shock);
    const w = one(wing);
    const both = ranker.weightedBm25(ids, [{ ...shock, weight: 0.5 }, { ...wing, weight: 3 }], titleWeight);
    for (const r of both) expect(r.s).toBeCloseTo(0.5 * s.get(r.id)! + 3 * w.get(r.id)!, 9);
    db.close();
  });

  it('candidates: FTS5 ranking within the scope, normalised by the best reachable score', () => {
    const { db, ranker, scope } = setup(60);
    const terms = ranker.originalTerms('shock laminar');
    const all = ranker.candidates(terms, { workspaceId: 'w' }, scope, 100, titleWeight);
    expect(all.length).toBeGreaterThan(10);
    for (const r of all) {
      expect(r.lexical).toBeGreaterThan(0);
      expect(r.lexical).toBeLessThanOrEqual(1);
    }
    for (let i = 1; i < all.length; i++) expect(all[i].lexical).toBeLessThanOrEqual(all[i - 1].lexical);
    // best = Σ idf · (k1 + 1)
    expect(ranker.maxBm25(terms)).toBeGreaterThan(0);
    // A scope of a few documents: only their rows.
    const mask = new Uint8Array(60);
    [1, 2, 3, 4, 5].forEach((d) => (mask[d] = 1));
    const some = ranker.candidates(terms, { workspaceId: 'w' }, { ...scope, mask, docs: [1, 2, 3, 4, 5], chunks: 5 }, 100, titleWeight);
    expect(some.every((r) => r.id - WS_SPAN >= 1 && r.id - WS_SPAN <= 5)).toBe(true);
    expect(some.map((r) => r.id)).toEqual(all.filter((r) => r.id - WS_SPAN >= 1 && r.id - WS_SPAN <= 5).map((r) => r.id));
    expect(ranker.candidates([], { workspaceId: 'w' }, scope, 10, titleWeight)).toEqual([]);
    db.close();
  });

  it('filtered candidates (scope ranked alone) equal an unfiltered ranking filtered afterwards: same rows, order and scores', () => {
    // 20 words in 3,000 short chunks: many exact BM25 ties, so the order of equal scores is checked too.
    const n = 3000;
    const { db, ranker, scope } = setup(n, 11);
    const rand = rng(12);
    const queries = ['shock laminar', 'wing', 'heat transfer nozzle', 'the of a', 'mach pressure jet flow', 'turbulent boundary layer waves'];
    for (const share of [0.002, 0.05, 0.3, 0.9]) {
      for (let trial = 0; trial < 3; trial++) {
        const mask = new Uint8Array(n);
        const docs: number[] = [];
        for (let d = 0; d < n; d++) {
          if (rand() < share) {
            mask[d] = 1;
            docs.push(d);
          }
        }
        const filtered = { ...scope, mask, docs, chunks: docs.length };
        for (const q of queries) {
          const terms = ranker.originalTerms(q);
          const reference = ranker.candidates(terms, { workspaceId: 'w' }, scope, n, titleWeight).filter((r) => mask[r.id - WS_SPAN] === 1);
          for (const m of [1, 10, 100]) {
            expect(ranker.candidates(terms, { workspaceId: 'w' }, filtered, m, titleWeight)).toEqual(reference.slice(0, m));
          }
        }
      }
    }
    db.close();
  });

  it('weighted candidates re-rank the pool plus the strongest new terms\' hits', () => {
    const { db, ranker, scope } = setup(60);
    const original = ranker.originalTerms('nozzle');
    const expanded = ranker.expand(original, [{ text: 'jet nozzle turbulent mach heat', weight: 1 }], { ...DEFAULT_HYBRID_CONFIG.prf, maxDocFrequency: 1, terms: 3 });
    expect(expanded.length).toBeGreaterThan(1);
    expect(expanded[0]).toMatchObject({ stem: 'nozzl', original: true });
    const pool = ranker.candidates(original, { workspaceId: 'w' }, scope, 5, titleWeight).map((r) => r.id);
    const withoutNew = ranker.candidates(expanded, { workspaceId: 'w' }, scope, 100, titleWeight, pool);
    expect(withoutNew.map((r) => r.id).sort()).toEqual([...pool].sort());
    const withNew = ranker.candidates(expanded, { workspaceId: 'w' }, scope, 100, titleWeight, pool, undefined, 2);
    expect(withNew.length).toBeGreaterThan(pool.length);
    for (const r of withNew) expect(r.lexical).toBeLessThanOrEqual(1);
    db.close();
  });

  it('caches document frequencies until writes reach 1% of the chunks', () => {
    const { db, ranker, corpus } = setup(200);
    const shock = ranker.docFrequencies(['shock', 'nosuchterm']);
    expect(shock.get('shock')).toBe(db.prepare("SELECT doc FROM chunks_vocab WHERE term = 'shock'").pluck().get());
    expect(shock.has('nosuchterm')).toBe(false);
    db.exec(`DELETE FROM chunks_fts; DELETE FROM chunks`);
    corpus.writes += 2; // 1% of 200: still cached
    expect(ranker.docFrequencies(['shock']).get('shock')).toBe(shock.get('shock'));
    corpus.writes += 1;
    expect(ranker.docFrequencies(['shock']).has('shock')).toBe(false);
    db.close();
  });
});

describe('FTS5 averages record', () => {
  it('decodes SQLite varints: row count then per-column token totals', () => {
    // 3 rows; 200 (two bytes: 0x81 0x48) and 5 tokens.
    expect(decodeAverages(Uint8Array.of(3, 0x81, 0x48, 5))).toEqual({ rows: 3, avgLength: 205 / 3 });
    // Nine-byte varint: the ninth byte carries 8 bits.
    const nine = Uint8Array.of(1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0xff);
    expect(decodeAverages(nine).avgLength).toBe(255);
    expect(decodeAverages(new Uint8Array(0))).toEqual({ rows: 1, avgLength: 1e-9 });
  });

  it('matches FTS5\'s own record', () => {
    const { db, ranker } = setup(30);
    const { block } = db.prepare<[], { block: Buffer }>('SELECT block FROM chunks_fts_data WHERE id = 1').get()!;
    const tokens = db.prepare<[], { n: number }>("SELECT sum(length(document_title) - length(replace(document_title, ' ', '')) + 1 + length(content) - length(replace(content, ' ', '')) + 1) AS n FROM chunks").get()!.n;
    expect(decodeAverages(block)).toEqual({ rows: 30, avgLength: tokens / 30 });
    expect(ranker.chunks).toBe(30);
    db.close();
  });
});
