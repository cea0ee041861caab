import type Database from 'better-sqlite3';
import { LexicalIndex } from '../../src/adapters/embedded/lexicalIndex';
import { decodeAverages } from '../../src/adapters/embedded/lexicalRanker';
import { openIndexDatabase, WS_SPAN } from '../../src/adapters/embedded/schema';
import { StatementCache } from '../../src/adapters/embedded/statements';
import { Stemmer } from '../../src/adapters/embedded/stemmer';
import { mulberry32 as rng } from '../../src/util/random';

const WORDS = 'shock wave waves boundary layer flow flows heat transfer wing nozzle jet mach pressure the of a in laminar turbulent Über café'.split(' ');

interface Row {
  id: number;
  ws: number;
  doc: number;
  title: string;
  content: string;
}

/**
 * The same chunks in FTS5 tables, one per workspace (the reference: its bm25(), whose
 * statistics are then the workspace's own, as the index's must be: sixth hostile look), and in
 * one LexicalIndex; writes go to both.
 */
class Pair {
  readonly db: Database.Database;
  readonly index: LexicalIndex;
  readonly rows = new Map<number, Row>();
  private readonly perWorkspace = new Map<number, Database.Database>();

  constructor(compactMinDead?: number) {
    this.db = openIndexDatabase(':memory:');
    const stemmer = new Stemmer(new StatementCache(this.db));
    this.index = new LexicalIndex((w) => stemmer.stems(w), compactMinDead);
  }

  /** The FTS5 table of one workspace. */
  dbOf(ws: number): Database.Database {
    let db = this.perWorkspace.get(ws);
    if (!db) this.perWorkspace.set(ws, (db = openIndexDatabase(':memory:')));
    return db;
  }

  add(r: Row): void {
    this.dbOf(r.ws).prepare('INSERT INTO chunks_fts(rowid, title, content) VALUES (?, ?, ?)').run(r.id, r.title, r.content);
    this.index.add(r.id, r.ws, r.doc, r.title, r.content);
    this.rows.set(r.id, r);
  }

  remove(id: number): void {
    const r = this.rows.get(id)!;
    this.dbOf(r.ws).prepare('DELETE FROM chunks_fts WHERE rowid = ?').run(id);
    this.index.remove(id, r.ws, r.title, r.content);
    this.rows.delete(id);
  }

  /** FTS5's N and average length of a workspace's table. */
  stats(ws: number): { rows: number; avgLength: number } {
    return decodeAverages(this.dbOf(ws).prepare<[], { block: Buffer }>('SELECT block FROM chunks_fts_data WHERE id = 1').get()!.block);
  }

  top(ws: number, stems: string[], titleWeight: number, mask: Uint8Array, m: number): { id: number; s: number }[] {
    return this.index.top(ws, stems, titleWeight, mask, m, this.stats(ws));
  }

  close(): void {
    this.db.close();
    for (const db of this.perWorkspace.values()) db.close();
  }

  /** FTS5's ranking of the workspace's matches: positive scores, best first, ties by row id. */
  reference(ws: number, words: string[], titleWeight: number, mask?: Uint8Array): { id: number; s: number }[] {
    const match = words.map((w) => `"${w}"`).join(' OR ');
    return this.dbOf(ws)
      .prepare<[string, number, number], { id: number; s: number }>(
        `SELECT rowid AS id, -bm25(chunks_fts, ${titleWeight}, 1.0) AS s FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid BETWEEN ? AND ?`,
      )
      .all(match, ws * WS_SPAN, (ws + 1) * WS_SPAN - 1)
      .filter((r) => !mask || mask[this.rows.get(r.id)!.doc] === 1)
      .sort((a, b) => b.s - a.s || a.id - b.id);
  }
}

function text(rand: () => number, n: number): string {
  return Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
}

function stemsOf(db: Database.Database, words: string[]): string[] {
  return new Stemmer(new StatementCache(db)).stems(words);
}

/** Same rows in the same order; scores equal to 1e-9 (FTS5 and V8 may round a log differently). */
function expectSameRanking(mine: { id: number; s: number }[], ref: { id: number; s: number }[]): void {
  expect(mine.map((r) => r.id)).toEqual(ref.map((r) => r.id));
  mine.forEach((r, i) => expect(r.s).toBeCloseTo(ref[i].s, 9));
}

describe('LexicalIndex (in-memory BM25)', () => {
  const queries = ['shock laminar', 'wing', 'heat transfer nozzle', 'the of a', 'mach pressure jet flow', 'turbulent boundary layer waves', 'café uber'];

  it('ranks every match of a workspace exactly as FTS5\'s bm25() does, title weighted, other workspaces apart', () => {
    const rand = rng(3);
    const p = new Pair();
    let id = 0;
    for (let d = 0; d < 600; d++) {
      const ws = d % 5 === 0 ? 2 : 1;
      const chunks = 1 + Math.floor(rand() * 3);
      for (let c = 0; c < chunks; c++) {
        p.add({ id: ws * WS_SPAN + ++id, ws, doc: d, title: `${WORDS[d % WORDS.length]} notes`, content: text(rand, 3 + Math.floor(rand() * 60)) });
      }
    }
    const all = new Uint8Array(600).fill(1);
    for (const q of queries) {
      const words = q.split(' ');
      const stems = stemsOf(p.db, words);
      for (const ws of [1, 2]) {
        for (const titleWeight of [2, 1]) {
          const ref = p.reference(ws, words, titleWeight);
          expect(ref.length).toBeGreaterThan(0);
          for (const m of [1, 10, 1000]) expectSameRanking(p.top(ws, stems, titleWeight, all, m), ref.slice(0, m));
        }
      }
    }
    // The index's own statistics of each workspace are FTS5's over that workspace alone.
    for (const ws of [1, 2]) {
      const mine = p.index.statsOf(ws);
      const ref = p.stats(ws);
      expect(mine.rows).toBe(ref.rows);
      expect(mine.avgLength).toBeCloseTo(ref.avgLength, 9);
      for (const stem of ['shock', 'wave', 'the', 'uber']) {
        expect(p.index.docFrequencyIn(ws, stem)).toBe(p.dbOf(ws).prepare("SELECT doc FROM chunks_vocab WHERE term = ?").pluck().get(stem) ?? 0);
      }
    }
    expect(p.index.docFrequencyIn(1, 'shock') + p.index.docFrequencyIn(2, 'shock')).toBe(p.index.docFrequency('shock'));
    expect(p.top(3, ['shock'], 2, all, 10)).toEqual([]);
    p.close();
  });

  it('honours the document mask (filters) before keeping the top m', () => {
    const rand = rng(7);
    const p = new Pair();
    for (let d = 0; d < 800; d++) p.add({ id: WS_SPAN + d + 1, ws: 1, doc: d, title: 'notes', content: text(rand, 10 + Math.floor(rand() * 30)) });
    for (const share of [0.01, 0.2, 0.9]) {
      const mask = new Uint8Array(800);
      for (let d = 0; d < 800; d++) if (rand() < share) mask[d] = 1;
      for (const q of queries) {
        const words = q.split(' ');
        const ref = p.reference(1, words, 2, mask);
        for (const m of [1, 10, 100]) expectSameRanking(p.top(1, stemsOf(p.db, words), 2, mask, m), ref.slice(0, m));
      }
    }
    p.close();
  });

  it('follows deletes and re-adds (document frequencies, row count, lengths), with and without compaction', () => {
    for (const compactMinDead of [1, 1_000_000]) {
      const rand = rng(11);
      const p = new Pair(compactMinDead);
      let id = 0;
      for (let round = 0; round < 6; round++) {
        for (let d = 0; d < 150; d++) p.add({ id: WS_SPAN + ++id, ws: 1, doc: round * 1000 + d, title: `${WORDS[d % WORDS.length]}`, content: text(rand, 5 + Math.floor(rand() * 40)) });
        // Delete about half of what is there, then check against FTS5.
        for (const r of [...p.rows.keys()]) if (rand() < 0.5) p.remove(r);
        const all = new Uint8Array(10_000).fill(1);
        for (const q of queries) {
          const words = q.split(' ');
          expectSameRanking(p.top(1, stemsOf(p.db, words), 2, all, 50), p.reference(1, words, 2).slice(0, 50));
        }
        expect(p.index.rows).toBe(p.rows.size);
        for (const stem of ['shock', 'wave', 'the', 'uber']) {
          expect(p.index.docFrequency(stem)).toBe(p.dbOf(1).prepare("SELECT doc FROM chunks_vocab WHERE term = ?").pluck().get(stem) ?? 0);
          expect(p.index.docFrequencyIn(1, stem)).toBe(p.index.docFrequency(stem));
        }
      }
      // Removing everything drops the workspace's postings.
      for (const r of [...p.rows.keys()]) p.remove(r);
      expect(p.index.rows).toBe(0);
      expect(p.index.postings).toBe(0);
      expect(p.top(1, ['shock'], 2, new Uint8Array(10_000).fill(1), 10)).toEqual([]);
      p.close();
    }
  });

  it('keeps exact frequencies beyond the packed range (long titles, very repetitive content)', () => {
    const p = new Pair();
    p.add({ id: WS_SPAN + 1, ws: 1, doc: 0, title: Array(12).fill('shock').join(' '), content: 'wing' });
    p.add({ id: WS_SPAN + 2, ws: 1, doc: 1, title: 'wing', content: Array(9000).fill('shock').join(' ') });
    p.add({ id: WS_SPAN + 3, ws: 1, doc: 2, title: 'shock', content: 'shock wing flow' });
    p.add({ id: WS_SPAN + 4, ws: 1, doc: 3, title: 'heat', content: 'flow' });
    const all = new Uint8Array(4).fill(1);
    for (const titleWeight of [2, 5]) expectSameRanking(p.top(1, ['shock', 'wing'], titleWeight, all, 10), p.reference(1, ['shock', 'wing'], titleWeight));
    p.remove(WS_SPAN + 1);
    expectSameRanking(p.top(1, ['shock'], 2, all, 10), p.reference(1, ['shock'], 2));
    p.close();
  });

  it('refuses a row indexed twice', () => {
    const p = new Pair();
    p.add({ id: WS_SPAN + 1, ws: 1, doc: 0, title: 't', content: 'shock' });
    expect(() => p.index.add(WS_SPAN + 1, 1, 0, 't', 'shock')).toThrow(/already indexed/);
    p.close();
  });
});
