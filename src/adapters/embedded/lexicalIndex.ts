/**
 * In-memory BM25 for the embedded index's lexical leg: per workspace, each term's postings
 * (chunk number, title and content frequency) and each chunk's length, plus the index-wide
 * statistics FTS5's bm25() uses (each term's document frequency, the row count, the token
 * total). A query's BM25 over every match in the workspace is then one pass over its terms'
 * postings into an accumulator (term at a time, a few ns per posting) instead of FTS5's
 * bm25() on each matching row (about 1 µs per row and phrase): with natural-language
 * queries, whose common words match most of a workspace, FTS5 cost 80 ms at 100k chunks and
 * seconds at 1M.
 *
 * Scores are FTS5's: k1 = 1.2, b = 0.75, frequencies weighted by column (title weight, content
 * 1), row length = tokens of title and content, idf = ln((N − n + 0.5)/(n + 0.5)) (1e-6 when not
 * positive), n the live rows holding the term, all workspaces counted, N and the average length
 * from FTS5's own averages record (see `top`); words
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
/** Compaction when dead chunks exceed the live ones (and this many). */
const COMPACT_MIN_DEAD = 4096;

interface Postings {
  lex: Int32Array;
  tf: Uint16Array;
  n: number;
}

/** One workspace's chunks: numbered in insertion order ("lex" numbers), postings by term. */
class Space {
  readonly postings = new Map<number, Postings>();
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
  }

  get live(): number {
    return this.next - this.dead;
  }
}

const SNAPSHOT_MAGIC = 'KBLX';
const SNAPSHOT_FORMAT = 1;
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

/** FTS5's N and average row length (decodeAverages of its averages record). */
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
  private rowCount = 0;
  /** Chunks of the snapshot read last (checked by `complete`). */
  private snapshotRows = -1;
  private readonly spaces = new Map<number, Space>();
  /** Reused per chunk: its distinct terms and their frequencies by term id. */
  private tallyTerms = new Int32Array(256);
  private tallyCount = 0;
  private tallyTitle = new Uint32Array(0);
  private tallyContent = new Uint32Array(0);

  /** `compactMinDead`: removed chunks a workspace holds before compaction is considered. */
  constructor(
    private readonly stem: StemFn,
    private readonly compactMinDead = COMPACT_MIN_DEAD,
  ) {}

  /** Live rows indexed (all workspaces). */
  get rows(): number {
    return this.rowCount;
  }

  /** Postings held (live and not yet compacted), for memory figures. */
  get postings(): number {
    let n = 0;
    for (const s of this.spaces.values()) for (const p of s.postings.values()) n += p.n;
    return n;
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
    for (let i = 0; i < this.tallyCount; i++) {
      const t = this.tallyTerms[i];
      const ti = this.tallyTitle[t];
      const co = this.tallyContent[t];
      this.df[t]++;
      let p = space.postings.get(t);
      if (!p) space.postings.set(t, (p = { lex: new Int32Array(4), tf: new Uint16Array(4), n: 0 }));
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
    for (let i = 0; i < this.tallyCount; i++) this.df[this.tallyTerms[i]]--;
    this.resetTally();
    space.lexOfRow.delete(rowId);
    space.docOfLex[lex] = -1;
    this.rowCount--;
    space.dead++;
    if (space.dead >= this.compactMinDead && space.dead > space.live) this.compact(space);
    if (space.live === 0 && space.dead > 0) this.spaces.delete(workspace);
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
   * Replaces the contents with the snapshot in `file` when it carries this stamp; false (and
   * nothing changed) when there is none, it is of another stamp or format, or unreadable.
   * The chunks' documents are then attached with `bind` as the rows are loaded.
   */
  readSnapshot(file: string, stamp: SnapshotStamp): boolean {
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
      if (header.format !== SNAPSHOT_FORMAT || header.generation !== stamp.generation || header.schema !== stamp.schema) return false;
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
        for (let i = 0; i < h.terms; i++) lists.push({ lex: take((b, o, n) => new Int32Array(b, o, n), counts[i], 4), tf: new Uint16Array(0), n: counts[i] });
        for (let i = 0; i < h.terms; i++) {
          lists[i].tf = take((b, o, n) => new Uint16Array(b, o, n), counts[i], 2);
          sp.postings.set(termIds[i], lists[i]);
        }
        for (const [t, entries] of h.escaped) sp.escaped.set(t, new Map(entries.map(([lex, ti, co]) => [lex, [ti, co] as [number, number]])));
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
      this.snapshotRows = header.rows;
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
    return true;
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
  }

  /**
   * The top `m` chunks of the workspace by BM25 of the stems (equal weights), among the
   * documents in `mask`: exact over every match, ordered by score then row id. `stats` are
   * FTS5's row count and average length (its averages record: a contentless-delete table
   * never subtracts deleted rows from them, so they are read from FTS5, not counted here).
   */
  top(workspace: number, stems: string[], titleWeight: number, mask: Uint8Array, m: number, stats: Bm25Stats): LexicalMatch[] {
    const space = this.spaces.get(workspace);
    if (!space || m <= 0) return [];
    if (space.acc.length < space.next) {
      space.acc = new Float64Array(space.rowOfLex.length);
      space.touched = new Int32Array(space.rowOfLex.length);
    }
    const { acc, touched, docOfLex, lenOfLex } = space;
    let nTouched = 0;
    const n = stats.rows;
    const avg = stats.avgLength;
    const k1p1 = BM25_K1 + 1;
    for (const stem of stems) {
      const t = this.termOfStem.get(stem);
      const p = t === undefined ? undefined : space.postings.get(t);
      if (t === undefined || !p) continue;
      const nHit = this.df[t];
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
}
