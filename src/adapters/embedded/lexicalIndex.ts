/**
 * In-memory BM25 for the embedded index's lexical leg: per workspace, each term's postings
 * (chunk number, title and content frequency) and each chunk's length, plus the index-wide
 * statistics FTS5's bm25() uses (each term's document frequency, the row count, the token
 * total). A query's BM25 over every match in the workspace is then one pass over its terms'
 * postings into an accumulator (term at a time, a few ns per posting) instead of FTS5's
 * bm25() on each matching row (about 1 µs per row and phrase): with natural-language
 * queries, whose common words match most of a workspace, FTS5 cost 80 ms at 100k chunks and
 * seconds at 1M. Long queries (PRUNE_MIN_POSTINGS) are ranked with exact dynamic pruning
 * (`topPruned`, MaxScore term at a time: the same chunks and scores, bit for bit), and the
 * feedback pass re-scores its pool from the postings (`scoreRows`).
 *
 * Scores are FTS5's: k1 = 1.2, b = 0.75, frequencies weighted by column (title weight, content
 * 1), row length = tokens of title and content, idf = ln((N − n + 0.5)/(n + 0.5)) (1e-6 when not
 * positive), n the live rows of the workspace holding the term, N and the average length over
 * the workspace's live rows (`statsOf`): each workspace is ranked as FTS5 would rank a table of
 * its own chunks, never with other workspaces' text (sixth hostile look: index-wide counts let
 * one search tell whether a word occurs in another tenant's documents); words
 * split as FTS5's unicode61 does (wordsOf) and stemmed by FTS5's own porter tokenizer (the
 * index's Stemmer). It follows every write (a removed chunk's text is tokenized again to take
 * its terms out of the document frequencies; its postings are dropped lazily, by compaction).
 *
 * Persistence: derived from the chunks table, which stays the truth. Tokenizing every chunk on
 * open costs minutes at a million chunks, so a clean close writes a snapshot beside the file
 * (`writeSnapshot`: postings, lengths, frequencies, stems), stamped with the file's write
 * generation (a counter the index bumps in every write transaction); an open whose generation
 * matches reads it instead (`readSnapshot`), and every snapshot chunk must then be found among
 * the rows loaded (`bind`). Anything else (no snapshot, a crash after writes, a mismatch)
 * rebuilds from the chunks' text.
 */
import fs from 'node:fs';
import { wordsOf } from '../../search/textAnalysis';

export const BM25_K1 = 1.2; // FTS5's constants
export const BM25_B = 0.75;

/** Title and content frequency packed in 16 bits: title < 8, content < 8191; else ESCAPE. */
const TITLE_SHIFT = 13;
const CONTENT_MASK = (1 << TITLE_SHIFT) - 1;
const ESCAPE = 0xffff;
/** The vocabulary is trimmed when this many terms lost their last chunk (and they are half of it). */
const TRIM_MIN_DEAD_TERMS = 50_000;
/** Compaction when dead chunks exceed the live ones (and this many). */
const COMPACT_MIN_DEAD = 4096;

interface Postings {
  /** Chunk numbers, ascending. */
  lex: Int32Array;
  tf: Uint16Array;
  n: number;
  /**
   * Bounds over the first `boundN` postings (extended lazily by a pruned search, reset by
   * compaction): the largest title and content frequency and the shortest chunk. Removed
   * chunks' postings may be counted: the bounds stay upper bounds.
   */
  maxTi: number;
  maxCo: number;
  minLen: number;
  boundN: number;
}

const newPostings = (lex: Int32Array, tf: Uint16Array, n: number): Postings => ({ lex, tf, n, maxTi: 0, maxCo: 0, minLen: Infinity, boundN: 0 });

/**
 * Pruned ranking is used when the query's postings reach this many. Measured on the bench's
 * corpus (the Cranfield questions, top 100, CPU per query, load average 9–12): a 500-chunk
 * workspace (~700 postings per query) 0.08 ms exhaustive against 0.14 pruned; 100k chunks
 * (~140,000 postings) 4.5–4.9 ms against 3.0–3.3; 1M (~1.4 M) 55–65 ms against 28–36.
 */
export const PRUNE_MIN_POSTINGS = 20_000;
/** Relative slack of the score bounds (covers rounding: bounds are summed in another order than scores). */
const SLACK = 1e-9;
/** A look-up of one chunk in a posting list costs about this many postings read in order. */
const LOOKUP_COST = 4;
/** A threshold check is made only when the rest has this many times the postings of the chunks touched (1 and 2 measured; 1 was cheaper at 1M). */
const CHECK_RATIO = 1;

/** One workspace's chunks: numbered in insertion order ("lex" numbers), postings by term. */
class Space {
  readonly postings = new Map<number, Postings>();
  /**
   * BM25's statistics of this workspace alone: its live chunks holding each term, its live
   * chunks and their tokens. Scores are ranked with these, never with other workspaces' text
   * (sixth hostile look: index-wide counts let one search tell whether a word occurs in
   * another tenant's documents).
   */
  df = new Map<number, number>();
  rowCount = 0;
  totalLength = 0;
  /** Exact frequencies of postings whose packed value is ESCAPE: term → lex → [title, content]. */
  readonly escaped = new Map<number, Map<number, [number, number]>>();
  readonly lexOfRow = new Map<number, number>();
  rowOfLex = new Float64Array(0);
  /** Interned document of each chunk, -1 once removed. */
  docOfLex = new Int32Array(0);
  lenOfLex = new Uint32Array(0);
  next = 0;
  dead = 0;
  /** Scratch of a search: scores by lex number and the numbers touched. */
  acc = new Float64Array(0);
  touched = new Int32Array(0);
  /** Each chunk's BM25 length norm k1·(1 − b + b·len/avg) for the average `normAvg`, over the first `normN` chunks. */
  norm = new Float64Array(0);
  normAvg = NaN;
  normN = 0;
  /** Scratch of a pruned search: candidates and their partial scores. */
  spareIds = new Int32Array(0);
  spareScores = new Float64Array(0);

  ensure(n: number): void {
    if (n <= this.rowOfLex.length) return;
    const cap = Math.max(n, Math.ceil(this.rowOfLex.length * 1.5), 64);
    const grow = <T extends Float64Array | Int32Array | Uint32Array>(old: T, make: (c: number) => T): T => {
      const a = make(cap);
      a.set(old);
      return a;
    };
    this.rowOfLex = grow(this.rowOfLex, (c) => new Float64Array(c));
    this.docOfLex = grow(this.docOfLex, (c) => new Int32Array(c));
    this.lenOfLex = grow(this.lenOfLex, (c) => new Uint32Array(c));
    // Scratch is sized on the next search.
    this.acc = new Float64Array(0);
    this.touched = new Int32Array(0);
    this.norm = new Float64Array(0);
    this.normN = 0;
  }

  /** The length norms for this average (computed again when it changed, extended over new chunks). */
  norms(avg: number): Float64Array {
    if (this.norm.length < this.rowOfLex.length) {
      this.norm = new Float64Array(this.rowOfLex.length);
      this.normN = 0;
    }
    if (avg !== this.normAvg) this.normN = 0;
    const { norm, lenOfLex } = this;
    // The expression of topExhaustive, so the scores are the same bit for bit.
    for (let l = this.normN; l < this.next; l++) norm[l] = BM25_K1 * (1 - BM25_B + (BM25_B * lenOfLex[l]) / avg);
    this.normAvg = avg;
    this.normN = this.next;
    return norm;
  }

  get live(): number {
    return this.next - this.dead;
  }
}

const SNAPSHOT_MAGIC = 'KBLX';
/** 2: written since the chunk rows record the generation their text was set in (`lexgen`), so an older snapshot can be caught up. */
const SNAPSHOT_FORMAT = 2;
const align = (n: number): number => Math.ceil(n / 8) * 8;

/** What a snapshot must match to be used: the file's write generation and layout. */
export interface SnapshotStamp {
  generation: number;
  schema: string;
}

interface SnapshotHeader extends SnapshotStamp {
  format: number;
  rows: number;
  stems: string[];
  spaces: { workspace: number; chunks: number; terms: number; escaped: [number, [number, number, number][]][] }[];
}

/** BM25's N and average row length in tokens (FTS5's formula: every column's tokens over rows). */
export interface Bm25Stats {
  rows: number;
  avgLength: number;
}

export interface LexicalMatch {
  id: number;
  /** BM25, positive, higher is better. */
  s: number;
}

/** Stems of words ('' for a word with no token), in order: the index's FTS5 stemmer. */
export type StemFn = (words: string[]) => string[];

export class LexicalIndex {
  private readonly termOfStem = new Map<string, number>();
  /** Word → term id (-1: a word without a token). Grows with the vocabulary of the indexed text. */
  private readonly termOfWord = new Map<string, number>();
  private df = new Int32Array(1024);
  private terms = 0;
  /** Terms whose last live chunk was removed since the vocabulary was last trimmed. */
  private deadTerms = 0;
  private rowCount = 0;
  /** Tokens (title and content) of the live rows: with `rowCount`, BM25's average length. */
  private totalLength = 0;
  /** Chunks of the snapshot read last (checked by `complete`). */
  private snapshotRows = -1;
  /** The write generation of the snapshot read last. */
  snapshotGeneration = -1;
  private readonly spaces = new Map<number, Space>();
  /** Reused per chunk: its distinct terms and their frequencies by term id. */
  private tallyTerms = new Int32Array(256);
  private tallyCount = 0;
  private tallyTitle = new Uint32Array(0);
  private tallyContent = new Uint32Array(0);

  /** `compactMinDead`: removed chunks a workspace holds before compaction is considered. */
  /**
   * Queries with at least this many postings are ranked with dynamic pruning (`topPruned`),
   * smaller ones exhaustively; Infinity: never pruned, 0: always. The results are the same.
   */
  pruneMinPostings = PRUNE_MIN_POSTINGS;
  /**
   * What the pruned searches did, for benchmarks and tests: searches, those where the bounds
   * cut the remaining terms off (`cutOff`), postings read in full and the query terms'
   * postings in all.
   */
  readonly pruning = { searches: 0, cutOff: 0, postingsRead: 0, postingsTotal: 0, candidates: 0 };

  constructor(
    private readonly stem: StemFn,
    private readonly compactMinDead = COMPACT_MIN_DEAD,
    /** Terms no live chunk holds any more before the word and stem maps are trimmed. */
    private readonly trimMinDeadTerms = TRIM_MIN_DEAD_TERMS,
  ) {}

  /** Words and stems known (for memory figures and tests). */
  get vocabulary(): { words: number; stems: number } {
    return { words: this.termOfWord.size, stems: this.termOfStem.size };
  }

  /**
   * Forgets the words and stems of terms no live chunk holds (document frequency 0). Their
   * ids are not reused: a stem that comes back gets a new id, so postings of removed chunks
   * still waiting for compaction under the old id are never read for it.
   */
  private trimVocabulary(): void {
    for (const [w, t] of this.termOfWord) if (t >= 0 && this.df[t] === 0) this.termOfWord.delete(w);
    for (const [stem, t] of this.termOfStem) if (this.df[t] === 0) this.termOfStem.delete(stem);
    this.deadTerms = 0;
  }

  /** Live rows indexed (all workspaces). */
  get rows(): number {
    return this.rowCount;
  }

  /**
   * BM25's N and average row length over the live rows (all workspaces), with FTS5's
   * formula: tokens of every column over rows, N at least 1. These, not FTS5's averages
   * record, rank: a contentless-delete table never takes a deleted row out of its totals
   * (nor does `DELETE FROM` on a clear), so its figures grew with every deletion,
   * re-processing, retitling and rebuild, and a rebuilt index ranked otherwise than the
   * live one. Equal to FTS5's for an index that never lost a row.
   */
  get stats(): Bm25Stats {
    const rows = Math.max(1, this.rowCount);
    return { rows, avgLength: Math.max(1e-9, this.totalLength / rows) };
  }

  /** Postings held (live and not yet compacted), for memory figures. */
  get postings(): number {
    let n = 0;
    for (const s of this.spaces.values()) for (const p of s.postings.values()) n += p.n;
    return n;
  }

  /** BM25's N and average row length over one workspace's live rows (what ranks it). */
  statsOf(workspace: number): Bm25Stats {
    const space = this.spaces.get(workspace);
    const rows = Math.max(1, space?.rowCount ?? 0);
    return { rows, avgLength: Math.max(1e-9, (space?.totalLength ?? 0) / rows) };
  }

  /** Rows of one workspace holding the stem; 0 when unknown. */
  docFrequencyIn(workspace: number, stem: string): number {
    const t = this.termOfStem.get(stem);
    return t === undefined ? 0 : (this.spaces.get(workspace)?.df.get(t) ?? 0);
  }

  /** Rows holding the stem (all workspaces); 0 when unknown. */
  docFrequency(stem: string): number {
    const t = this.termOfStem.get(stem);
    return t === undefined ? 0 : this.df[t];
  }

  private termOf(stem: string): number {
    let t = this.termOfStem.get(stem);
    if (t === undefined) {
      t = this.terms++;
      this.termOfStem.set(stem, t);
      if (t >= this.df.length) {
        const next = new Int32Array(this.df.length * 2);
        next.set(this.df);
        this.df = next;
      }
    }
    return t;
  }

  /**
   * Counts the chunk's terms into the tally (`tallyTerms[0, tallyCount)`, their title and
   * content frequencies in `tallyTitle`/`tallyContent`, reset by the caller); returns its
   * length in tokens.
   */
  private count(title: string, content: string): number {
    const columns = [wordsOf(title), wordsOf(content)];
    let unknown: string[] | undefined;
    for (const list of columns) for (const w of list) if (!this.termOfWord.has(w)) (unknown ??= []).push(w);
    if (unknown) {
      const distinct = [...new Set(unknown)];
      this.stem(distinct).forEach((s, i) => this.termOfWord.set(distinct[i], s ? this.termOf(s) : -1));
    }
    if (this.tallyTitle.length < this.terms) {
      this.tallyTitle = new Uint32Array(this.df.length);
      this.tallyContent = new Uint32Array(this.df.length);
    }
    let length = 0;
    this.tallyCount = 0;
    for (let column = 0; column < 2; column++) {
      const counts = column === 0 ? this.tallyTitle : this.tallyContent;
      for (const w of columns[column]) {
        const t = this.termOfWord.get(w)!;
        if (t < 0) continue;
        length++;
        if (this.tallyTitle[t] === 0 && this.tallyContent[t] === 0) {
          if (this.tallyCount === this.tallyTerms.length) {
            const next = new Int32Array(this.tallyTerms.length * 2);
            next.set(this.tallyTerms);
            this.tallyTerms = next;
          }
          this.tallyTerms[this.tallyCount++] = t;
        }
        counts[t]++;
      }
    }
    return length;
  }

  private resetTally(): void {
    for (let i = 0; i < this.tallyCount; i++) {
      const t = this.tallyTerms[i];
      this.tallyTitle[t] = 0;
      this.tallyContent[t] = 0;
    }
    this.tallyCount = 0;
  }

  private space(workspace: number): Space {
    let s = this.spaces.get(workspace);
    if (!s) this.spaces.set(workspace, (s = new Space()));
    return s;
  }

  /** Indexes a chunk (its row id, workspace number and interned document). */
  add(rowId: number, workspace: number, doc: number, title: string, content: string): void {
    const space = this.space(workspace);
    if (space.lexOfRow.has(rowId)) throw new Error(`row ${rowId} is already indexed`);
    const length = this.count(title, content);
    const lex = space.next++;
    space.ensure(space.next);
    space.rowOfLex[lex] = rowId;
    space.docOfLex[lex] = doc;
    space.lenOfLex[lex] = length;
    space.lexOfRow.set(rowId, lex);
    this.rowCount++;
    this.totalLength += length;
    space.rowCount++;
    space.totalLength += length;
    for (let i = 0; i < this.tallyCount; i++) {
      const t = this.tallyTerms[i];
      const ti = this.tallyTitle[t];
      const co = this.tallyContent[t];
      this.df[t]++;
      space.df.set(t, (space.df.get(t) ?? 0) + 1);
      let p = space.postings.get(t);
      if (!p) space.postings.set(t, (p = newPostings(new Int32Array(4), new Uint16Array(4), 0)));
      if (p.n === p.lex.length) {
        const cap = Math.ceil(p.n * 1.5) + 4;
        const lexes = new Int32Array(cap);
        lexes.set(p.lex);
        const tfs = new Uint16Array(cap);
        tfs.set(p.tf);
        p.lex = lexes;
        p.tf = tfs;
      }
      p.lex[p.n] = lex;
      if (ti < 8 && co < CONTENT_MASK) p.tf[p.n] = (ti << TITLE_SHIFT) | co;
      else {
        p.tf[p.n] = ESCAPE;
        let e = space.escaped.get(t);
        if (!e) space.escaped.set(t, (e = new Map()));
        e.set(lex, [ti, co]);
      }
      p.n++;
    }
    this.resetTally();
  }

  /** Takes a chunk out (its text as indexed, to take its terms out of the frequencies). */
  remove(rowId: number, workspace: number, title: string, content: string): void {
    const space = this.spaces.get(workspace);
    const lex = space?.lexOfRow.get(rowId);
    if (!space || lex === undefined) return;
    this.count(title, content);
    for (let i = 0; i < this.tallyCount; i++) {
      const t = this.tallyTerms[i];
      if (--this.df[t] === 0) this.deadTerms++;
      const d = (space.df.get(t) ?? 1) - 1;
      if (d > 0) space.df.set(t, d);
      else space.df.delete(t);
    }
    this.resetTally();
    space.lexOfRow.delete(rowId);
    space.docOfLex[lex] = -1;
    this.rowCount--;
    this.totalLength -= space.lenOfLex[lex];
    space.rowCount--;
    space.totalLength -= space.lenOfLex[lex];
    space.dead++;
    if (space.dead >= this.compactMinDead && space.dead > space.live) this.compact(space);
    if (space.live === 0 && space.dead > 0) this.spaces.delete(workspace);
    if (this.deadTerms >= this.trimMinDeadTerms && this.deadTerms * 2 > this.termOfStem.size) this.trimVocabulary();
  }

  /** Drops removed chunks' postings and renumbers the live ones. */
  private compact(space: Space): void {
    const renum = new Int32Array(space.next).fill(-1);
    let n = 0;
    for (let lex = 0; lex < space.next; lex++) {
      if (space.docOfLex[lex] < 0) continue;
      renum[lex] = n;
      space.rowOfLex[n] = space.rowOfLex[lex];
      space.docOfLex[n] = space.docOfLex[lex];
      space.lenOfLex[n] = space.lenOfLex[lex];
      space.lexOfRow.set(space.rowOfLex[n], n);
      n++;
    }
    for (const [t, p] of space.postings) {
      const esc = space.escaped.get(t);
      const moved = esc ? new Map<number, [number, number]>() : undefined;
      let k = 0;
      for (let i = 0; i < p.n; i++) {
        const to = renum[p.lex[i]];
        if (to < 0) continue;
        if (p.tf[i] === ESCAPE) moved!.set(to, esc!.get(p.lex[i])!);
        p.lex[k] = to;
        p.tf[k] = p.tf[i];
        k++;
      }
      if (k === 0) {
        space.postings.delete(t);
        space.escaped.delete(t);
        continue;
      }
      p.n = k;
      p.maxTi = 0;
      p.maxCo = 0;
      p.minLen = Infinity;
      p.boundN = 0;
      if (k * 2 < p.lex.length) {
        p.lex = p.lex.slice(0, k);
        p.tf = p.tf.slice(0, k);
      }
      if (moved) space.escaped.set(t, moved);
    }
    space.next = n;
    space.dead = 0;
    space.acc = new Float64Array(0);
    space.touched = new Int32Array(0);
    space.normN = 0;
  }

  // ------------------------------------------------------------ snapshot

  /** Compacts every workspace and writes the snapshot (temp file, then renamed over `file`). */
  writeSnapshot(file: string, stamp: SnapshotStamp): void {
    for (const space of this.spaces.values()) if (space.dead > 0) this.compact(space);
    // Only terms some chunk holds, renumbered: the words of deleted documents are not written.
    const newId = new Int32Array(this.terms).fill(-1);
    const stems: string[] = [];
    const byId = new Array<string>(this.terms);
    for (const [stem, t] of this.termOfStem) byId[t] = stem;
    for (let t = 0; t < this.terms; t++) {
      if (this.df[t] > 0) {
        newId[t] = stems.length;
        stems.push(byId[t]);
      }
    }
    const df = new Int32Array(stems.length);
    for (let t = 0; t < this.terms; t++) if (newId[t] >= 0) df[newId[t]] = this.df[t];
    const spaces = [...this.spaces].map(([workspace, sp]) => ({
      workspace,
      chunks: sp.next,
      terms: sp.postings.size,
      escaped: [...sp.escaped].map(([t, e]) => [newId[t], [...e].map(([lex, [ti, co]]) => [lex, ti, co])]),
    }));
    const header = Buffer.from(JSON.stringify({ format: SNAPSHOT_FORMAT, ...stamp, rows: this.rowCount, stems, spaces }));
    const tmp = `${file}.${process.pid}.tmp`;
    const fd = fs.openSync(tmp, 'w');
    try {
      let offset = 0;
      const write = (bytes: Uint8Array): void => {
        fs.writeSync(fd, bytes);
        offset += bytes.byteLength;
        const pad = (8 - (offset % 8)) % 8;
        if (pad > 0) {
          fs.writeSync(fd, new Uint8Array(pad));
          offset += pad;
        }
      };
      const view = (a: Int32Array | Uint16Array | Float64Array | Uint32Array): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
      const len = Buffer.alloc(8);
      len.writeUInt32LE(header.byteLength, 0);
      len.write(SNAPSHOT_MAGIC, 4, 'latin1');
      write(len);
      write(header);
      write(view(df));
      for (const sp of this.spaces.values()) {
        write(view(sp.rowOfLex.subarray(0, sp.next)));
        write(view(sp.lenOfLex.subarray(0, sp.next)));
        const termIds = new Int32Array(
          [...sp.postings.keys()].map((t) => {
            if (newId[t] < 0) throw new Error('postings of a term no chunk holds');
            return newId[t];
          }),
        );
        const counts = new Int32Array([...sp.postings.values()].map((p) => p.n));
        write(view(termIds));
        write(view(counts));
        for (const p of sp.postings.values()) write(view(p.lex.subarray(0, p.n)));
        for (const p of sp.postings.values()) write(view(p.tf.subarray(0, p.n)));
      }
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  }

  /**
   * Replaces the contents with the snapshot in `file` when it carries this stamp (with
   * `older`: this schema and a generation no later than the stamp's, as after a crash that
   * followed writes); false (and nothing changed) when there is none, it is of another stamp
   * or format, or unreadable. The chunks' documents are then attached with `bind` as the rows
   * are loaded; with an older snapshot, `dropUnbound` then forgets the chunks no row bound and
   * the caller adds the rows written since (`snapshotGeneration`).
   */
  readSnapshot(file: string, stamp: SnapshotStamp, older = false): boolean {
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(file);
    } catch {
      return false;
    }
    try {
      if (bytes.byteLength < 8 || bytes.toString('latin1', 4, 8) !== SNAPSHOT_MAGIC) return false;
      const headerLength = bytes.readUInt32LE(0);
      const header = JSON.parse(bytes.toString('utf8', 8, 8 + headerLength)) as SnapshotHeader;
      if (header.format !== SNAPSHOT_FORMAT || header.schema !== stamp.schema) return false;
      if (older ? !(header.generation <= stamp.generation) : header.generation !== stamp.generation) return false;
      // Typed views need aligned offsets: copy when the file's buffer is not 8-byte aligned.
      const buf = bytes.byteOffset % 8 === 0 ? bytes : Buffer.from(bytes);
      let offset = align(8 + headerLength);
      const take = <T>(make: (b: ArrayBuffer, o: number, n: number) => T, n: number, size: number): T => {
        if (offset + n * size > buf.byteLength) throw new Error('snapshot truncated');
        const out = make(buf.buffer as ArrayBuffer, buf.byteOffset + offset, n);
        offset = align(offset + n * size);
        return out;
      };
      const terms = header.stems.length;
      const df = take((b, o, n) => new Int32Array(b, o, n), terms, 4);
      const spaces = new Map<number, Space>();
      for (const h of header.spaces) {
        const sp = new Space();
        sp.rowOfLex = take((b, o, n) => new Float64Array(b, o, n), h.chunks, 8);
        sp.lenOfLex = take((b, o, n) => new Uint32Array(b, o, n), h.chunks, 4);
        sp.docOfLex = new Int32Array(h.chunks).fill(-1);
        sp.next = h.chunks;
        sp.dead = h.chunks; // each chunk comes alive when `bind` finds its row
        for (let l = 0; l < h.chunks; l++) sp.lexOfRow.set(sp.rowOfLex[l], l);
        const termIds = take((b, o, n) => new Int32Array(b, o, n), h.terms, 4);
        const counts = take((b, o, n) => new Int32Array(b, o, n), h.terms, 4);
        const lists: Postings[] = [];
        for (let i = 0; i < h.terms; i++) lists.push(newPostings(take((b, o, n) => new Int32Array(b, o, n), counts[i], 4), new Uint16Array(0), counts[i]));
        for (let i = 0; i < h.terms; i++) {
          lists[i].tf = take((b, o, n) => new Uint16Array(b, o, n), counts[i], 2);
          sp.postings.set(termIds[i], lists[i]);
        }
        for (const [t, entries] of h.escaped) sp.escaped.set(t, new Map(entries.map(([lex, ti, co]) => [lex, [ti, co] as [number, number]])));
        // The snapshot's postings are its live chunks' (any chunk no row binds is dropped, and these counted again, by dropUnbound).
        for (let i = 0; i < h.terms; i++) if (counts[i] > 0) sp.df.set(termIds[i], counts[i]);
        spaces.set(h.workspace, sp);
      }
      this.clear();
      this.termOfStem.clear();
      this.termOfWord.clear();
      header.stems.forEach((stem, t) => this.termOfStem.set(stem, t));
      this.terms = terms;
      this.df = new Int32Array(Math.max(1024, terms * 2));
      this.df.set(df);
      for (const [w, sp] of spaces) this.spaces.set(w, sp);
      this.rowCount = 0;
      this.totalLength = 0;
      this.snapshotRows = header.rows;
      this.snapshotGeneration = header.generation;
      return true;
    } catch {
      return false;
    }
  }

  /** Attaches a loaded row to its snapshot chunk; false when the snapshot does not hold it. */
  bind(rowId: number, workspace: number, doc: number): boolean {
    const space = this.spaces.get(workspace);
    const lex = space?.lexOfRow.get(rowId);
    if (!space || lex === undefined || space.docOfLex[lex] >= 0) return false;
    space.docOfLex[lex] = doc;
    space.dead--;
    this.rowCount++;
    this.totalLength += space.lenOfLex[lex];
    space.rowCount++;
    space.totalLength += space.lenOfLex[lex];
    return true;
  }

  /**
   * After binding the rows of an older snapshot: forgets the chunks no row bound (their rows
   * were deleted, or their text was set again, since the snapshot): their postings go, and each
   * term's document frequency is counted again from the postings left, so their text is not
   * needed. Returns how many were dropped. The rows written since are then `add`ed.
   */
  dropUnbound(): number {
    let dropped = 0;
    for (const [workspace, space] of this.spaces) {
      if (space.dead === 0) continue;
      for (let lex = 0; lex < space.next; lex++) {
        if (space.docOfLex[lex] >= 0) continue;
        space.lexOfRow.delete(space.rowOfLex[lex]);
        dropped++;
      }
      this.compact(space);
      if (space.live === 0) this.spaces.delete(workspace);
    }
    this.df.fill(0);
    for (const space of this.spaces.values()) {
      space.df = new Map();
      for (const [t, p] of space.postings) {
        this.df[t] += p.n;
        if (p.n > 0) space.df.set(t, p.n);
      }
    }
    this.snapshotRows = this.rowCount;
    if (dropped > 0) this.trimVocabulary();
    return dropped;
  }

  /** After binding every row: whether the snapshot held exactly the rows loaded. */
  get complete(): boolean {
    return this.rowCount === this.snapshotRows && [...this.spaces.values()].every((s) => s.dead === 0);
  }

  /** Forgets everything. */
  clear(): void {
    this.spaces.clear();
    this.df.fill(0);
    this.rowCount = 0;
    this.totalLength = 0;
  }

  /**
   * The top `m` chunks of the workspace by BM25 of the stems (equal weights), among the
   * documents in `mask`: exact over every match, ordered by score then row id. `stats` are
   * the row count and average length (`stats` of this index, when it ranks).
   * Long queries are ranked with dynamic pruning (`topPruned`), which returns the same
   * chunks with the same scores, bit for bit, as the exhaustive pass (`topExhaustive`).
   */
  top(workspace: number, stems: string[], titleWeight: number, mask: Uint8Array, m: number, stats: Bm25Stats): LexicalMatch[] {
    const space = this.spaces.get(workspace);
    if (!space || m <= 0) return [];
    if (this.pruneMinPostings !== Infinity && titleWeight >= 0 && Number.isFinite(titleWeight)) {
      let total = 0;
      for (const stem of stems) {
        const t = this.termOfStem.get(stem);
        const p = t === undefined ? undefined : space.postings.get(t);
        if (p) total += p.n;
      }
      if (total >= this.pruneMinPostings && total > m) return this.topPruned(space, stems, titleWeight, mask, m, stats);
    }
    return this.topExhaustive(workspace, stems, titleWeight, mask, m, stats);
  }

  private scratch(space: Space): void {
    if (space.acc.length < space.next) {
      space.acc = new Float64Array(space.rowOfLex.length);
      space.touched = new Int32Array(space.rowOfLex.length);
    }
  }

  /** `top` by one pass over every posting of the query's terms (term at a time). */
  topExhaustive(workspace: number, stems: string[], titleWeight: number, mask: Uint8Array, m: number, stats: Bm25Stats): LexicalMatch[] {
    const space = this.spaces.get(workspace);
    if (!space || m <= 0) return [];
    this.scratch(space);
    const { acc, touched, docOfLex, lenOfLex } = space;
    let nTouched = 0;
    const n = stats.rows;
    const avg = stats.avgLength;
    const k1p1 = BM25_K1 + 1;
    for (const stem of stems) {
      const t = this.termOfStem.get(stem);
      const p = t === undefined ? undefined : space.postings.get(t);
      if (t === undefined || !p) continue;
      const nHit = space.df.get(t) ?? 0;
      let idf = Math.log((n - nHit + 0.5) / (nHit + 0.5));
      if (idf <= 0) idf = 1e-6;
      const esc = space.escaped.get(t);
      const { lex, tf } = p;
      for (let i = 0; i < p.n; i++) {
        // Removed chunks are scored too (their postings stay until compaction) and dropped
        // with the mask below: one load less per posting.
        const l = lex[i];
        const packed = tf[i];
        let f: number;
        if (packed !== ESCAPE) f = (packed >>> TITLE_SHIFT) * titleWeight + (packed & CONTENT_MASK);
        else {
          const [ti, co] = esc!.get(l)!;
          f = ti * titleWeight + co;
        }
        if (f <= 0) continue;
        // FTS5's expression, operation for operation.
        const add = idf * ((f * k1p1) / (f + BM25_K1 * (1 - BM25_B + (BM25_B * lenOfLex[l]) / avg)));
        if (acc[l] === 0) touched[nTouched++] = l;
        acc[l] += add;
      }
    }
    // Bounded min-heap of the best m: worst = lower score, then higher row id.
    const hs = new Float64Array(m);
    const hr = new Float64Array(m);
    let size = 0;
    const worse = (s1: number, r1: number, s2: number, r2: number): boolean => s1 < s2 || (s1 === s2 && r1 > r2);
    for (let j = 0; j < nTouched; j++) {
      const l = touched[j];
      const s = acc[l];
      acc[l] = 0;
      const doc = docOfLex[l];
      if (doc < 0 || mask[doc] !== 1) continue;
      const r = space.rowOfLex[l];
      if (size < m) {
        let i = size++;
        while (i > 0) {
          const par = (i - 1) >> 1;
          if (!worse(s, r, hs[par], hr[par])) break;
          hs[i] = hs[par];
          hr[i] = hr[par];
          i = par;
        }
        hs[i] = s;
        hr[i] = r;
      } else if (worse(hs[0], hr[0], s, r)) {
        let i = 0;
        for (;;) {
          const l2 = 2 * i + 1;
          if (l2 >= size) break;
          const r2 = l2 + 1;
          const c = r2 < size && worse(hs[r2], hr[r2], hs[l2], hr[l2]) ? r2 : l2;
          if (!worse(hs[c], hr[c], s, r)) break;
          hs[i] = hs[c];
          hr[i] = hr[c];
          i = c;
        }
        hs[i] = s;
        hr[i] = r;
      }
    }
    const out: LexicalMatch[] = [];
    for (let i = 0; i < size; i++) out.push({ id: hr[i], s: hs[i] });
    return out.sort((a, b) => b.s - a.s || a.id - b.id);
  }

  /**
   * BM25 of the given chunks (row ids of the workspace; rows not indexed are left out) for
   * weighted terms: Σ weight · idf · tf·(k1 + 1)/(tf + k1·(1 − b + b·len/avg)), in the
   * terms' order, with idf = max(ln((N − n + 0.5)/(n + 0.5)), 1e-6): the feedback pass's
   * re-scoring (LexicalRanker.weightedBm25 computes the same from the chunks' text), here
   * from the postings (a binary search per chunk and term) instead of reading and
   * tokenizing the text.
   */
  scoreRows(workspace: number, rowIds: readonly number[], terms: readonly { stem: string; weight: number }[], titleWeight: number, stats: Bm25Stats): LexicalMatch[] {
    const space = this.spaces.get(workspace);
    if (!space || rowIds.length === 0) return [];
    const { rows: n, avgLength } = stats;
    const lists: (Postings | undefined)[] = [];
    const escs: (Map<number, [number, number]> | undefined)[] = [];
    const factor: number[] = [];
    for (const term of terms) {
      const t = this.termOfStem.get(term.stem);
      const df = t === undefined ? 0 : (space.df.get(t) ?? 0);
      const idf = Math.max(Math.log((n - df + 0.5) / (df + 0.5)), 1e-6);
      lists.push(t === undefined ? undefined : space.postings.get(t));
      escs.push(t === undefined ? undefined : space.escaped.get(t));
      factor.push(term.weight * idf);
    }
    // The chunks in ascending order, so each term's list is walked once (galloping).
    const found: { id: number; l: number }[] = [];
    for (const id of rowIds) {
      const l = space.lexOfRow.get(id);
      if (l !== undefined && space.docOfLex[l] >= 0) found.push({ id, l });
    }
    found.sort((a, b) => a.l - b.l);
    const pos = new Int32Array(lists.length);
    const out: LexicalMatch[] = [];
    for (const { id, l } of found) {
      const norm = BM25_K1 * (1 - BM25_B + (BM25_B * space.lenOfLex[l]) / avgLength);
      let s = 0;
      for (let i = 0; i < lists.length; i++) {
        const p = lists[i];
        if (!p) continue;
        const at = (pos[i] = seek(p.lex, pos[i], p.n, l));
        if (at >= p.n || p.lex[at] !== l) continue;
        const packed = p.tf[at];
        let f: number;
        if (packed !== ESCAPE) f = (packed >>> TITLE_SHIFT) * titleWeight + (packed & CONTENT_MASK);
        else {
          const [ti, co] = escs[i]!.get(l)!;
          f = ti * titleWeight + co;
        }
        if (f > 0) s += factor[i] * ((f * (BM25_K1 + 1)) / (f + norm));
      }
      out.push({ id, s });
    }
    return out;
  }

  /** Extends the term's bounds over postings added since they were last computed. */
  private bounds(space: Space, t: number, p: Postings): void {
    if (p.boundN >= p.n) return;
    const { lex, tf } = p;
    const len = space.lenOfLex;
    let maxTi = p.maxTi;
    let maxCo = p.maxCo;
    let minLen = p.minLen;
    let escaped = false;
    for (let i = p.boundN; i < p.n; i++) {
      const packed = tf[i];
      if (packed === ESCAPE) {
        escaped = true;
        continue;
      }
      const ti = packed >>> TITLE_SHIFT;
      const co = packed & CONTENT_MASK;
      if (ti > maxTi) maxTi = ti;
      if (co > maxCo) maxCo = co;
      const l = len[lex[i]];
      if (l < minLen) minLen = l;
    }
    if (escaped) {
      // Rare: exact frequencies beyond the packed range (the length of those chunks too).
      for (const [l, [ti, co]] of space.escaped.get(t) ?? []) {
        if (ti > maxTi) maxTi = ti;
        if (co > maxCo) maxCo = co;
        if (len[l] < minLen) minLen = len[l];
      }
    }
    p.maxTi = maxTi;
    p.maxCo = maxCo;
    p.minLen = minLen;
    p.boundN = p.n;
  }

  /**
   * `top` with dynamic pruning (MaxScore, term at a time). Each term's score is bounded by
   * its largest frequencies and shortest chunk (`bounds`). Terms are read best bound first
   * into the accumulator. After each, a threshold θ is known for sure: the m-th best of the
   * complete scores of the 2m chunks with the best partial scores (their remaining terms
   * looked up). Once the bounds of the terms left add up to less than θ, no chunk they
   * alone hold can enter the top m: their postings are then only looked up (galloping) for
   * the candidates whose partial score plus those bounds reaches θ, pruned again after each
   * term; this switch is made when those look-ups cost less than reading the rest
   * (LOOKUP_COST). The survivors' scores are then summed again in the query's order of
   * terms, exactly as `topExhaustive` sums them, so the result is the same bit for bit.
   * Worst case (no bound ever prunes): the exhaustive pass plus a few threshold checks.
   */
  private topPruned(space: Space, stems: string[], titleWeight: number, mask: Uint8Array, m: number, stats: Bm25Stats): LexicalMatch[] {
    this.scratch(space);
    const { acc, touched, docOfLex } = space;
    const n = stats.rows;
    const avg = stats.avgLength;
    const norm = space.norms(avg);
    const k1p1 = BM25_K1 + 1;
    // The query's terms present in the workspace, in query order (duplicates kept, as the exhaustive pass adds them twice).
    const lists: Postings[] = [];
    const idfs: number[] = [];
    const escs: (Map<number, [number, number]> | undefined)[] = [];
    const ubs: number[] = [];
    for (const stem of stems) {
      const t = this.termOfStem.get(stem);
      const p = t === undefined ? undefined : space.postings.get(t);
      if (t === undefined || !p) continue;
      const nHit = space.df.get(t) ?? 0;
      let idf = Math.log((n - nHit + 0.5) / (nHit + 0.5));
      if (idf <= 0) idf = 1e-6;
      this.bounds(space, t, p);
      const fMax = p.maxTi * titleWeight + p.maxCo;
      const ub = fMax > 0 ? idf * ((fMax * k1p1) / (fMax + BM25_K1 * (1 - BM25_B + (BM25_B * p.minLen) / avg))) * (1 + SLACK) : 0;
      lists.push(p);
      idfs.push(idf);
      escs.push(space.escaped.get(t));
      ubs.push(ub);
    }
    const q = lists.length;
    // Processing order: largest bound first (rare terms: short lists), then shorter list.
    const order = Array.from({ length: q }, (_, i) => i).sort((a, b) => ubs[b] - ubs[a] || lists[a].n - lists[b].n || a - b);
    const restUb = new Float64Array(q + 1); // bounds of order[j..]
    const restPostings = new Float64Array(q + 1);
    for (let j = q - 1; j >= 0; j--) {
      restUb[j] = (restUb[j + 1] + ubs[order[j]]) * (1 + SLACK);
      restPostings[j] = restPostings[j + 1] + lists[order[j]].n;
    }
    /** Column-weighted frequency of posting `i` (0 when absent). */
    const freq = (p: Postings, esc: Map<number, [number, number]> | undefined, i: number): number => {
      const packed = p.tf[i];
      if (packed !== ESCAPE) return (packed >>> TITLE_SHIFT) * titleWeight + (packed & CONTENT_MASK);
      const [ti, co] = esc!.get(p.lex[i])!;
      return ti * titleWeight + co;
    };
    const best = new Threshold(m);
    const eligible = (l: number): boolean => {
      const doc = docOfLex[l];
      return doc >= 0 && mask[doc] === 1;
    };

    /**
     * A threshold known for sure after term order[j]: the m-th best complete score of a sample
     * of chunks in the mask with high partial scores (at least `m`, at most 8m; their other
     * terms looked up); -Infinity while too few chunks are touched.
     */
    const sampleTheta = (j: number): number => {
      let max = 0;
      for (let x = 0; x < nTouched; x++) if (acc[touched[x]] > max) max = acc[touched[x]];
      const sample = new Int32Array(8 * m);
      let ns = 0;
      for (const share of [0.7, 0.5, 0.3, 0]) {
        const cut = max * share;
        ns = 0;
        for (let x = 0; x < nTouched && ns < sample.length; x++) {
          const l = touched[x];
          if (acc[l] >= cut && eligible(l)) sample[ns++] = l;
        }
        if (ns >= m) break;
      }
      if (ns < m) return -Infinity;
      const ids = sample.subarray(0, ns).sort();
      const sums = new Float64Array(ns);
      for (let x = 0; x < ns; x++) sums[x] = acc[ids[x]];
      for (let r = j + 1; r < q; r++) lookUp(lists[order[r]], escs[order[r]], idfs[order[r]], titleWeight, norm, ids, sums, ns);
      best.reset();
      for (let x = 0; x < ns; x++) best.offer(sums[x]);
      return best.full ? best.min * (1 - SLACK) : -Infinity;
    };

    // Phase 1: terms at a time into the accumulator until the rest is cheaper to look up.
    let nTouched = 0;
    let stop = q;
    let theta = -Infinity;
    for (let j = 0; j < q; j++) {
      const i = order[j];
      nTouched = accumulate(lists[i], escs[i], idfs[i], titleWeight, norm, acc, touched, nTouched);
      // A check costs a pass over the chunks touched: only when the rest is much longer.
      if (j + 1 >= q || restPostings[j + 1] < CHECK_RATIO * nTouched) continue;
      const rest = restUb[j + 1];
      // Once: computed again as the rest shrinks, it cut off more searches but cost more than it saved (bench at 100k and 1M).
      if (theta === -Infinity) theta = sampleTheta(j);
      if (!(rest < theta)) continue;
      // Candidates now (estimated from at most 4,096 of the chunks touched), and whether
      // looking the rest up for them beats reading it.
      const stride = Math.max(1, Math.floor(nTouched / 4096));
      let c = 0;
      for (let x = 0; x < nTouched; x += stride) {
        const l = touched[x];
        if (acc[l] + rest >= theta && eligible(l)) c++;
      }
      if (c * stride * (q - j - 1) * LOOKUP_COST < restPostings[j + 1]) {
        stop = j + 1;
        break;
      }
    }

    // Candidates: chunks in the mask whose partial score plus the rest's bounds can reach θ.
    let cand: Int32Array;
    let candS: Float64Array;
    let nc = 0;
    if (stop < q) {
      const rest = restUb[stop];
      // Scratch of the workspace's size, reused (at 1M chunks a query touches ~10^5–10^6).
      if (space.spareIds.length < nTouched) {
        space.spareIds = new Int32Array(space.rowOfLex.length);
        space.spareScores = new Float64Array(space.rowOfLex.length);
      }
      cand = space.spareIds;
      // One pass: collect and clear (partial scores kept in the accumulator's place, by position until sorted).
      const partial = space.spareScores;
      for (let x = 0; x < nTouched; x++) {
        const l = touched[x];
        const a = acc[l];
        acc[l] = 0;
        if (a + rest >= theta && eligible(l)) {
          partial[nc] = a;
          cand[nc++] = l;
        }
      }
      // Sorted by chunk number for the look-ups; the partial scores follow through the accumulator.
      for (let x = 0; x < nc; x++) acc[cand[x]] = partial[x];
      cand = sortLex(cand.subarray(0, nc));
      candS = partial.subarray(0, nc);
      for (let x = 0; x < nc; x++) {
        candS[x] = acc[cand[x]];
        acc[cand[x]] = 0;
      }
      // Phase 2: the remaining terms, looked up for the candidates only; pruned after each.
      for (let j = stop; j < q && nc > 0; j++) {
        lookUp(lists[order[j]], escs[order[j]], idfs[order[j]], titleWeight, norm, cand, candS, nc);
        best.reset();
        for (let x = 0; x < nc; x++) best.offer(candS[x]);
        if (best.full) theta = Math.max(theta, best.min * (1 - SLACK));
        const restAfter = restUb[j + 1];
        let k = 0;
        for (let x = 0; x < nc; x++) {
          if (candS[x] + restAfter >= theta) {
            cand[k] = cand[x];
            candS[k] = candS[x];
            k++;
          }
        }
        nc = k;
      }
    } else {
      // Every term was read: the candidates are those whose (complete) sum reaches the m-th best.
      best.reset();
      for (let x = 0; x < nTouched; x++) if (eligible(touched[x])) best.offer(acc[touched[x]]);
      theta = best.full ? best.min * (1 - SLACK) : -Infinity;
      cand = new Int32Array(Math.min(nTouched, 4 * m + 16));
      candS = new Float64Array(cand.length);
      for (let x = 0; x < nTouched; x++) {
        const l = touched[x];
        const s = acc[l];
        acc[l] = 0;
        if (s < theta || !eligible(l)) continue;
        if (nc === cand.length) {
          const c2 = new Int32Array(nc * 2);
          c2.set(cand);
          cand = c2;
          const s2 = new Float64Array(nc * 2);
          s2.set(candS);
          candS = s2;
        }
        cand[nc] = l;
        candS[nc++] = s;
      }
    }
    this.pruning.searches++;
    if (stop < q) this.pruning.cutOff++;
    this.pruning.postingsRead += restPostings[0] - restPostings[stop];
    this.pruning.postingsTotal += restPostings[0];
    this.pruning.candidates += nc;

    // Exact scores, summed in the query's order of terms as topExhaustive sums them (the
    // accumulator above summed in bound order; when that is the query's order it is exact).
    const inQueryOrder = order.every((i, j) => i === j);
    const heap = new BestOf(m);
    for (let x = 0; x < nc; x++) {
      const l = cand[x];
      let s: number;
      if (inQueryOrder && stop === q) s = candS[x];
      else {
        s = 0;
        for (let i = 0; i < q; i++) {
          const p = lists[i];
          const pos = seek(p.lex, 0, p.n, l);
          if (pos >= p.n || p.lex[pos] !== l) continue;
          const f = freq(p, escs[i], pos);
          if (f <= 0) continue;
          s += idfs[i] * ((f * k1p1) / (f + norm[l]));
        }
      }
      heap.push(s, space.rowOfLex[l]);
    }
    return heap.sorted();
  }
}

/**
 * Adds a term's BM25 (idf, column-weighted frequencies, the chunks' length norms) over its
 * postings into `acc`, appending chunks touched for the first time to `touched`; returns
 * their new count. The expression is topExhaustive's, operation for operation.
 */
function accumulate(p: Postings, esc: Map<number, [number, number]> | undefined, idf: number, titleWeight: number, norm: Float64Array, acc: Float64Array, touched: Int32Array, nTouched: number): number {
  const { lex, tf } = p;
  const k1p1 = BM25_K1 + 1;
  for (let x = 0; x < p.n; x++) {
    const l = lex[x];
    const packed = tf[x];
    let f: number;
    if (packed !== ESCAPE) f = (packed >>> TITLE_SHIFT) * titleWeight + (packed & CONTENT_MASK);
    else {
      const [ti, co] = esc!.get(l)!;
      f = ti * titleWeight + co;
    }
    if (f <= 0) continue;
    const add = idf * ((f * k1p1) / (f + norm[l]));
    if (acc[l] === 0) touched[nTouched++] = l;
    acc[l] += add;
  }
  return nTouched;
}

/** Adds a term's BM25 of each chunk `ids[x]` (ascending, x < count) to `sums[x]`, galloping through its postings. */
function lookUp(p: Postings, esc: Map<number, [number, number]> | undefined, idf: number, titleWeight: number, norm: Float64Array, ids: Int32Array, sums: Float64Array, count: number): void {
  const { lex, tf } = p;
  const k1p1 = BM25_K1 + 1;
  let pos = 0;
  for (let x = 0; x < count && pos < p.n; x++) {
    const l = ids[x];
    pos = seek(lex, pos, p.n, l);
    if (pos < p.n && lex[pos] === l) {
      const packed = tf[pos];
      let f: number;
      if (packed !== ESCAPE) f = (packed >>> TITLE_SHIFT) * titleWeight + (packed & CONTENT_MASK);
      else {
        const [ti, co] = esc!.get(l)!;
        f = ti * titleWeight + co;
      }
      if (f > 0) sums[x] += idf * ((f * k1p1) / (f + norm[l]));
    }
  }
}

/** Sorts non-negative int32s ascending, in place: radix sort (two 16-bit passes) above a few hundred. */
function sortLex(a: Int32Array): Int32Array {
  const n = a.length;
  if (n < 512) return a.sort();
  const tmp = new Int32Array(n);
  const count = new Int32Array(65537);
  for (const [src, dst, shift] of [[a, tmp, 0], [tmp, a, 16]] as const) {
    count.fill(0);
    for (let i = 0; i < n; i++) count[((src[i] >>> shift) & 0xffff) + 1]++;
    for (let d = 0; d < 65536; d++) count[d + 1] += count[d];
    for (let i = 0; i < n; i++) dst[count[(src[i] >>> shift) & 0xffff]++] = src[i];
  }
  return a;
}

/** First index i in [from, n) with lex[i] ≥ target (n if none); lex ascending. Galloping, then binary search. */
function seek(lex: Int32Array, from: number, n: number, target: number): number {
  if (from >= n || lex[from] >= target) return from;
  let lo = from; // lex[lo] < target
  let step = 1;
  let hi = from + 1;
  while (hi < n && lex[hi] < target) {
    lo = hi;
    step *= 2;
    hi = lo + step;
  }
  if (hi > n) hi = n;
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (lex[mid] < target) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** The m-th largest of the values offered (a bounded min-heap of values). */
class Threshold {
  private readonly h: Float64Array;
  private size = 0;

  constructor(private readonly m: number) {
    this.h = new Float64Array(m);
  }

  reset(): void {
    this.size = 0;
  }

  get full(): boolean {
    return this.size === this.m;
  }

  get count(): number {
    return this.size;
  }

  /** The m-th largest so far (when full). */
  get min(): number {
    return this.h[0];
  }

  offer(v: number): void {
    const h = this.h;
    if (this.size < this.m) {
      let i = this.size++;
      while (i > 0) {
        const par = (i - 1) >> 1;
        if (h[par] <= v) break;
        h[i] = h[par];
        i = par;
      }
      h[i] = v;
    } else if (v > h[0]) {
      let i = 0;
      const size = this.size;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= size) break;
        const r = l + 1;
        const c = r < size && h[r] < h[l] ? r : l;
        if (h[c] >= v) break;
        h[i] = h[c];
        i = c;
      }
      h[i] = v;
    }
  }
}

/** The best m (score, row id) pairs: higher score first, then lower row id (topExhaustive's order). */
class BestOf {
  private readonly hs: Float64Array;
  private readonly hr: Float64Array;
  private size = 0;

  constructor(private readonly m: number) {
    this.hs = new Float64Array(m);
    this.hr = new Float64Array(m);
  }

  push(s: number, r: number): void {
    const { hs, hr } = this;
    const worse = (s1: number, r1: number, s2: number, r2: number): boolean => s1 < s2 || (s1 === s2 && r1 > r2);
    if (this.size < this.m) {
      let i = this.size++;
      while (i > 0) {
        const par = (i - 1) >> 1;
        if (!worse(s, r, hs[par], hr[par])) break;
        hs[i] = hs[par];
        hr[i] = hr[par];
        i = par;
      }
      hs[i] = s;
      hr[i] = r;
    } else if (worse(hs[0], hr[0], s, r)) {
      let i = 0;
      const size = this.size;
      for (;;) {
        const l2 = 2 * i + 1;
        if (l2 >= size) break;
        const r2 = l2 + 1;
        const c = r2 < size && worse(hs[r2], hr[r2], hs[l2], hr[l2]) ? r2 : l2;
        if (!worse(hs[c], hr[c], s, r)) break;
        hs[i] = hs[c];
        hr[i] = hr[c];
        i = c;
      }
      hs[i] = s;
      hr[i] = r;
    }
  }

  sorted(): LexicalMatch[] {
    const out: LexicalMatch[] = [];
    for (let i = 0; i < this.size; i++) out.push({ id: this.hr[i], s: this.hs[i] });
    return out.sort((a, b) => b.s - a.s || a.id - b.id);
  }
}
