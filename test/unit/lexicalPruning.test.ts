import { type Bm25Stats, LexicalIndex } from '../../src/adapters/embedded/lexicalIndex';
import { decodeAverages, LexicalRanker } from '../../src/adapters/embedded/lexicalRanker';
import { openIndexDatabase, WS_SPAN } from '../../src/adapters/embedded/schema';
import { StatementCache } from '../../src/adapters/embedded/statements';
import { Stemmer } from '../../src/adapters/embedded/stemmer';
import type { WeightedTerm } from '../../src/search/textAnalysis';
import { mulberry32 as rng } from '../../src/util/random';

/**
 * The pruned ranking (MaxScore) against the exhaustive pass over every posting: the same
 * chunks with the same scores, bit for bit, on random corpora (Zipf-distributed words, so
 * some terms hold most chunks and others a few), random queries, masks (tag- and
 * document-like filters), deletions with and without compaction, and title weights.
 */

const VOCAB = Array.from({ length: 400 }, (_, i) => `w${i.toString(36)}x`);

/** A word drawn with probability ∝ 1/(rank + 1). */
function zipf(rand: () => number): string {
  const h = Math.log(VOCAB.length + 1);
  return VOCAB[Math.min(VOCAB.length - 1, Math.floor(Math.exp(rand() * h)) - 1)];
}

interface Chunk {
  id: number;
  ws: number;
  doc: number;
  title: string;
  content: string;
}

class Corpus {
  readonly index: LexicalIndex;
  readonly live = new Map<number, Chunk>();
  private nextId = 0;

  constructor(
    private readonly rand: () => number,
    compactMinDead: number,
    trimMinDeadTerms?: number,
  ) {
    // Words are their own stems here: the stemmer is not what is tested.
    this.index = new LexicalIndex((words) => words, compactMinDead, trimMinDeadTerms);
    this.index.pruneMinPostings = 0;
  }

  add(ws: number, doc: number): void {
    const r = this.rand;
    const words = (n: number): string => Array.from({ length: n }, () => zipf(r)).join(' ');
    const title = r() < 0.05 ? Array(9 + Math.floor(r() * 4)).fill(zipf(r)).join(' ') : words(1 + Math.floor(r() * 4));
    let content = r() < 0.002 ? `${words(5)} ${Array(8200).fill(VOCAB[1]).join(' ')}` : words(5 + Math.floor(r() * 150));
    const id = ws * WS_SPAN + ++this.nextId;
    // Some chunks hold a word of their own: removing them kills the term.
    if (r() < 0.3) content = `${content} u${this.nextId}q`;
    this.index.add(id, ws, doc, title, content);
    this.live.set(id, { id, ws, doc, title, content });
  }

  remove(id: number): void {
    const c = this.live.get(id)!;
    this.index.remove(id, c.ws, c.title, c.content);
    this.live.delete(id);
  }

  stats(): Bm25Stats {
    let tokens = 0;
    for (const c of this.live.values()) tokens += `${c.title} ${c.content}`.split(' ').length;
    return { rows: Math.max(1, this.live.size), avgLength: Math.max(1e-9, tokens / Math.max(1, this.live.size)) };
  }
}

function query(rand: () => number): string[] {
  const n = 1 + Math.floor(rand() * 24);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const u = rand();
    if (u < 0.4) out.push(VOCAB[Math.floor(rand() * 12)]); // common: long lists
    else if (u < 0.9) out.push(VOCAB[12 + Math.floor(rand() * (VOCAB.length - 12))]);
    else if (u < 0.93) out.push('absentword');
    else if (u < 0.95) out.push(`u${Math.floor(rand() * 3000)}q`);
    else if (out.length > 0) out.push(out[Math.floor(rand() * out.length)]); // a duplicate
  }
  return out;
}

function masks(rand: () => number, docs: number): Uint8Array[] {
  const all = new Uint8Array(docs).fill(1);
  const tag = new Uint8Array(docs);
  for (let d = 0; d < docs; d += 10) tag[d] = 1;
  const half = new Uint8Array(docs);
  for (let d = 0; d < docs; d++) if (rand() < 0.5) half[d] = 1;
  const few = new Uint8Array(docs);
  for (let i = 0; i < 3; i++) few[Math.floor(rand() * docs)] = 1;
  return [all, tag, half, few, new Uint8Array(docs)];
}

function expectSame(c: Corpus, ws: number, stems: string[], titleWeight: number, mask: Uint8Array, m: number, stats: Bm25Stats): void {
  const pruned = c.index.top(ws, stems, titleWeight, mask, m, stats);
  const exhaustive = c.index.topExhaustive(ws, stems, titleWeight, mask, m, stats);
  // Bit for bit: ids in order and identical scores (toEqual compares numbers with Object.is).
  expect(pruned).toEqual(exhaustive);
}

describe('LexicalIndex pruned ranking (MaxScore)', () => {
  it('returns exactly the exhaustive top m on random corpora, queries, filters and title weights', () => {
    const rand = rng(42);
    const docs = 1500;
    const c = new Corpus(rand, 1_000_000);
    for (let d = 0; d < docs; d++) {
      const chunks = 1 + Math.floor(rand() * 3);
      for (let k = 0; k < chunks; k++) c.add(d % 7 === 0 ? 2 : 1, d);
    }
    const stats = c.stats();
    const ms = masks(rand, docs);
    const before = { ...c.index.pruning };
    let compared = 0;
    for (let qi = 0; qi < 12; qi++) {
      const stems = query(rand);
      for (const ws of [1, 2]) {
        for (const titleWeight of [2, 1, 0, 1.5]) {
          for (const mask of ms) {
            for (const m of [1, 10, 100, 1000]) {
              expectSame(c, ws, stems, titleWeight, mask, m, stats);
              compared++;
            }
          }
        }
      }
    }
    expect(compared).toBe(12 * 2 * 4 * 5 * 4);
    // The bounds did cut terms off in a good share of the searches (else this tests nothing).
    const searches = c.index.pruning.searches - before.searches;
    const cutOff = c.index.pruning.cutOff - before.cutOff;
    expect(searches).toBeGreaterThan(300);
    expect(cutOff / searches).toBeGreaterThan(0.2);
    expect(c.index.pruning.postingsRead - before.postingsRead).toBeLessThan(c.index.pruning.postingsTotal - before.postingsTotal);
  });

  it('stays exact through deletions and re-adds, with and without compaction, the vocabulary trimmed', () => {
    for (const compactMinDead of [1, 1_000_000]) {
      const rand = rng(7 + compactMinDead);
      const c = new Corpus(rand, compactMinDead, 5); // the vocabulary trimmed as terms die
      let doc = 0;
      for (let round = 0; round < 3; round++) {
        for (let d = 0; d < 300; d++) {
          doc++;
          for (let k = 0; k < 2; k++) c.add(1, doc);
        }
        for (const id of [...c.live.keys()]) if (rand() < 0.45) c.remove(id);
        const stats = c.stats();
        const ms = masks(rand, doc + 1);
        for (let qi = 0; qi < 25; qi++) {
          const stems = query(rand);
          for (const mask of ms) for (const m of [1, 10, 100]) expectSame(c, 1, stems, 2, mask, m, stats);
        }
      }
    }
  });

  it('ranks identically whatever the threshold that switches pruning on', () => {
    const rand = rng(3);
    const c = new Corpus(rand, 1_000_000);
    for (let d = 0; d < 400; d++) c.add(1, d);
    const stats = c.stats();
    const all = new Uint8Array(400).fill(1);
    for (let qi = 0; qi < 20; qi++) {
      const stems = query(rand);
      c.index.pruneMinPostings = Infinity;
      const never = c.index.top(1, stems, 2, all, 10, stats);
      c.index.pruneMinPostings = 0;
      expect(c.index.top(1, stems, 2, all, 10, stats)).toEqual(never);
    }
  });
});

describe('LexicalIndex.scoreRows (the feedback pass from the postings)', () => {
  it('scores weighted terms exactly as LexicalRanker.weightedBm25 does from the chunks\' text', () => {
    const db = openIndexDatabase(':memory:');
    const statements = new StatementCache(db);
    const stemmer = new Stemmer(statements);
    const index = new LexicalIndex((w) => stemmer.stems(w));
    const words = 'shock waves boundary layer flows heat transfer wing nozzle jets mach pressure the of laminar turbulent Über café running ran'.split(' ');
    const rand = rng(9);
    const ins = db.prepare(`INSERT INTO chunks (id, workspace_id, document_id, document_title, purpose, tags, chunk_index, content)
      VALUES (?, 'w', ?, ?, 'KNOWLEDGE', '[]', 0, ?)`);
    const fts = db.prepare('INSERT INTO chunks_fts(rowid, title, content) VALUES (?, ?, ?)');
    const n = 300;
    for (let d = 0; d < n; d++) {
      const pick = (): string => words[Math.floor(rand() * words.length)];
      const content = d === 7 ? Array(9000).fill('shock').join(' ') : Array.from({ length: 3 + Math.floor(rand() * 60) }, pick).join(' ');
      const title = d === 8 ? Array(10).fill('wing').join(' ') : `${pick()} ${pick()}`;
      ins.run(WS_SPAN + d, `d${d}`, title, content);
      fts.run(WS_SPAN + d, title, content);
      index.add(WS_SPAN + d, 1, d, title, content);
    }
    const corpus = { liveCount: n, dims: 8, writes: 0, inScope: (): boolean => true };
    const ranker = new LexicalRanker(statements, stemmer, corpus); // no index: FTS5's statistics, text re-read
    const stats = decodeAverages(db.prepare<[], { block: Buffer }>('SELECT block FROM chunks_fts_data WHERE id = 1').get()!.block);
    const ids = Array.from({ length: n }, (_, d) => WS_SPAN + d);
    for (let qi = 0; qi < 30; qi++) {
      const chosen = [...new Set(Array.from({ length: 1 + Math.floor(rand() * 20) }, () => words[Math.floor(rand() * words.length)]))];
      const stems = stemmer.stems(chosen);
      const seen = new Set<string>();
      const terms: WeightedTerm[] = [];
      chosen.forEach((w, i) => {
        if (seen.has(stems[i])) return;
        seen.add(stems[i]);
        terms.push({ text: w, stem: stems[i], weight: qi % 3 === 0 ? 1 : rand() * 2, original: rand() < 0.5 });
      });
      terms.push({ text: 'nowhere', stem: 'nowher', weight: 0.3, original: false });
      const pool = ids.filter(() => rand() < 0.3);
      for (const titleWeight of [2, 1, 0]) {
        const fromText = ranker.weightedBm25(pool, terms, titleWeight).sort((a, b) => a.id - b.id);
        const fromPostings = index.scoreRows(1, pool, terms, titleWeight, stats).sort((a, b) => a.id - b.id);
        expect(fromPostings).toEqual(fromText);
      }
    }
    expect(index.scoreRows(1, [WS_SPAN + 100_000], [{ stem: 'shock', weight: 1 }], 2, stats)).toEqual([]);
    db.close();
  });
});

describe('LexicalIndex vocabulary', () => {
  it('forgets the words of terms whose chunks are all removed, and ranks them again when they come back', () => {
    const index = new LexicalIndex((words) => words, 1_000_000, 10);
    const stats = { rows: 100, avgLength: 5 };
    const all = new Uint8Array(100).fill(1);
    index.add(WS_SPAN + 1, 1, 0, 'common', 'common shared words');
    for (let i = 0; i < 40; i++) index.add(WS_SPAN + 10 + i, 1, 1 + i, 'rare', `unique${i} also${i} common`);
    const before = index.vocabulary;
    expect(before.words).toBe(4 + 80);
    for (let i = 0; i < 40; i++) index.remove(WS_SPAN + 10 + i, 1, 'rare', `unique${i} also${i} common`);
    // 81 terms lost their last chunk ('rare' too): trimmed (amortized: once at least 10 and half
    // of the stems are dead, so a few of the last ones may wait); 'common', 'shared', 'words' stay.
    expect(index.vocabulary.words).toBeLessThan(10);
    expect(index.vocabulary.stems).toBeLessThan(10);
    expect(index.docFrequency('common')).toBe(1);
    expect(index.docFrequency('unique3')).toBe(0);
    expect(index.top(1, ['unique3'], 2, all, 10, stats)).toEqual([]);
    index.add(WS_SPAN + 60, 1, 50, 'rare', 'unique3 common');
    expect(index.docFrequency('unique3')).toBe(1);
    expect(index.topExhaustive(1, ['unique3', 'rare'], 2, all, 10, stats).map((r) => r.id)).toEqual([WS_SPAN + 60]);
    expect(index.topExhaustive(1, ['common'], 2, all, 10, stats).map((r) => r.id)).toEqual([WS_SPAN + 1, WS_SPAN + 60]);
  });
});
