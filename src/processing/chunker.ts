/**
 * Splitting extracted text into overlapping chunks for embedding and retrieval.
 *
 * Tokens. A simple deterministic tokenizer approximating model (BPE) tokens:
 * - every punctuation or symbol character is one token;
 * - every CJK ideograph / kana / hangul syllable is one token;
 * - any other run of letters and digits is one token per started 8 characters
 *   ("retrieval" = 2, "a" = 1, a 30-character identifier = 4).
 * Whitespace is not a token. For English prose this lands within ~20% of GPT-style
 * token counts, which is what chunk sizing needs. Token boundaries inside a long word
 * fall at fixed 8-character offsets from the start of the word, so cutting text at a token
 * boundary never changes how either side is counted: token counts are additive.
 *
 * Chunks.
 * - A chunk never mixes text of different `(page, section)`: its `page` and `section` are
 *   exactly where its text comes from (consecutive input sections with the same page and
 *   section are one continuous text, so a long text may arrive in many pieces).
 * - Within such a run, text is cut into units at paragraph, line and sentence ends; units are
 *   packed greedily up to `chunkTokens`. A unit longer than `chunkTokens` is cut at token
 *   boundaries into pieces of `chunkTokens - overlapTokens` tokens (room for the overlap).
 * - Each chunk after the first of a run starts with the last whole units of the previous chunk
 *   that fit in `overlapTokens` (or, when the last unit alone is longer, its last
 *   `overlapTokens` tokens), shrunk as needed so the chunk stays within `chunkTokens`.
 * - `tokenCount <= chunkTokens` always; `index` runs 0..n-1.
 *
 * Huge inputs: `Chunker` (push/flush) and `chunkTextStream` / `chunkTextAsync` hold only the
 * chunk being built plus the input piece being read, so a 20 MB text never needs all its
 * chunks (or its whole text) in memory at once.
 */

export interface TextSection {
  text: string;
  page?: number;
  section?: string;
}

export interface Chunk {
  index: number;
  content: string;
  tokenCount: number;
  page?: number;
  section?: string;
}

export interface ChunkOptions {
  chunkTokens: number;
  overlapTokens: number;
}

export const DEFAULT_CHUNK_TOKENS = 200;
export const DEFAULT_OVERLAP_TOKENS = 40;
export const DEFAULT_CHUNK_OPTIONS: Readonly<ChunkOptions> = {
  chunkTokens: DEFAULT_CHUNK_TOKENS,
  overlapTokens: DEFAULT_OVERLAP_TOKENS,
};

const MAX_WORD_PIECE = 8;
const CJK = String.raw`\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}`;
// One match per token, except alphanumeric runs (split into 8-character pieces by the caller).
const TOKEN_RE = new RegExp(String.raw`[${CJK}]|[^\s${CJK}\p{L}\p{N}\p{M}]|(?:(?![${CJK}])[\p{L}\p{N}\p{M}])+`, 'gu');

function wordPieces(len: number): number {
  return Math.ceil(len / MAX_WORD_PIECE);
}

function isWordRun(match: string): boolean {
  return match.length > 1 || /[\p{L}\p{N}\p{M}]/u.test(match);
}

/** Number of tokens in `text` (see the module comment for the tokenizer). */
export function countTokens(text: string): number {
  let n = 0;
  for (const m of text.matchAll(TOKEN_RE)) {
    // Code points, not UTF-16 units, so astral letters count like others.
    n += isWordRun(m[0]) ? wordPieces([...m[0]].length) : 1;
  }
  return n;
}

/** UTF-16 offsets at which each token starts, plus the text length at the end. */
function tokenStarts(text: string): number[] {
  const starts: number[] = [];
  for (const m of text.matchAll(TOKEN_RE)) {
    const at = m.index ?? 0;
    if (!isWordRun(m[0])) {
      starts.push(at);
      continue;
    }
    let off = at;
    let cps = 0;
    for (const ch of m[0]) {
      if (cps % MAX_WORD_PIECE === 0) starts.push(off);
      off += ch.length;
      cps++;
    }
  }
  return starts;
}

interface Unit {
  /** Text including the whitespace that followed it in the source (trimmed when a chunk is built). */
  text: string;
  tokens: number;
}

function validate(opts: ChunkOptions): void {
  const { chunkTokens, overlapTokens } = opts;
  if (!Number.isInteger(chunkTokens) || chunkTokens < 1) throw new RangeError(`chunkTokens must be a positive integer, got ${chunkTokens}`);
  if (!Number.isInteger(overlapTokens) || overlapTokens < 0 || overlapTokens >= chunkTokens) {
    throw new RangeError(`overlapTokens must be an integer in [0, chunkTokens), got ${overlapTokens}`);
  }
}

// A unit ends after a line break, or after sentence-ending punctuation (and closing quotes/brackets) followed by space.
// As a regular expression: /\n+|[.!?…。！？]+["'”’)\]]*[ \t]+|[。！？]/gu. `splitUnits` scans for the same
// matches in one pass: the expression's backtracking takes time quadratic in a long run of
// punctuation with no space after it (80,000 dots: 24 s).
const isSentenceEnd = (c: number): boolean => c === 0x2e || c === 0x21 || c === 0x3f || c === 0x2026 || isCjkSentenceEnd(c);
const isCjkSentenceEnd = (c: number): boolean => c === 0x3002 || c === 0xff01 || c === 0xff1f;
const isCloser = (c: number): boolean => c === 0x22 || c === 0x27 || c === 0x201d || c === 0x2019 || c === 0x29 || c === 0x5d;
const isSpaceOrTab = (c: number): boolean => c === 0x20 || c === 0x09;
/** Where a unit end may start (found by the engine, which is fast at that; the rest is decided below). */
const UNIT_END_START = /[\n.!?…。！？]/g;

/** Cuts text into sentence/line units, keeping every character (units concatenate to `text`). */
export function splitUnits(text: string): string[] {
  const out: string[] = [];
  let last = 0;
  const cut = (end: number): void => {
    if (end > last) {
      out.push(text.slice(last, end));
      last = end;
    }
  };
  const n = text.length;
  const re = UNIT_END_START;
  re.lastIndex = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const i = m.index;
    let j = i + 1;
    if (text.charCodeAt(i) === 0x0a) {
      while (j < n && text.charCodeAt(j) === 0x0a) j++;
      cut(j);
      re.lastIndex = j;
      continue;
    }
    while (j < n && isSentenceEnd(text.charCodeAt(j))) j++;
    let k = j;
    while (k < n && isCloser(text.charCodeAt(k))) k++;
    if (k < n && isSpaceOrTab(text.charCodeAt(k))) {
      while (k < n && isSpaceOrTab(text.charCodeAt(k))) k++;
      cut(k);
    } else {
      // No space after the run: each CJK sentence end in it ends a unit by itself.
      for (let p = i; p < j; p++) if (isCjkSentenceEnd(text.charCodeAt(p))) cut(p + 1);
    }
    re.lastIndex = k;
  }
  if (last < n) out.push(text.slice(last));
  return out;
}

/** Splits a unit with more than `max` tokens into pieces of at most `max` tokens, at token starts. */
function splitLongUnit(text: string, max: number): Unit[] {
  const starts = tokenStarts(text);
  const out: Unit[] = [];
  for (let i = 0; i < starts.length; i += max) {
    const from = i === 0 ? 0 : starts[i];
    const to = i + max < starts.length ? starts[i + max] : text.length;
    out.push({ text: text.slice(from, to), tokens: Math.min(max, starts.length - i) });
  }
  return out;
}

/** The last `n` tokens of `text` (from a token start). */
function tailTokens(text: string, n: number): Unit {
  const starts = tokenStarts(text);
  if (starts.length <= n) return { text, tokens: starts.length };
  return { text: text.slice(starts[starts.length - n]), tokens: n };
}

/**
 * Incremental chunker: `push` sections in document order and collect the chunks it returns,
 * then `flush` once at the end. Memory: the chunk being built, not the document.
 */
export class Chunker {
  private readonly opts: ChunkOptions;
  private nextIndex = 0;
  private key: string | undefined;
  private page: number | undefined;
  private section: string | undefined;
  /** Units of the chunk being built. */
  private units: Unit[] = [];
  private tokens = 0;
  /** Units of the current chunk that came from the previous one (overlap only, nothing new yet). */
  private carried = 0;

  constructor(opts: ChunkOptions = DEFAULT_CHUNK_OPTIONS) {
    validate(opts);
    this.opts = { chunkTokens: opts.chunkTokens, overlapTokens: opts.overlapTokens };
  }

  push(section: TextSection): Chunk[] {
    const out: Chunk[] = [];
    const key = `${section.page ?? ''}\u0000${section.section ?? ''}`;
    if (key !== this.key) {
      this.endRun(out);
      this.key = key;
      this.page = section.page;
      this.section = section.section;
    } else if (this.units.length > 0) {
      // A new piece of the same text starts a new paragraph.
      const last = this.units[this.units.length - 1];
      if (!/\s$/.test(last.text)) last.text += '\n\n';
    }
    for (const raw of splitUnits(section.text)) {
      const tokens = countTokens(raw);
      if (tokens === 0) {
        // Whitespace only: keep it as separator of the previous unit.
        if (this.units.length > 0) this.units[this.units.length - 1].text += raw;
        continue;
      }
      // A unit too long for a chunk is cut so that each piece still leaves room for the overlap.
      const pieceMax = this.opts.chunkTokens - this.opts.overlapTokens;
      const pieces = tokens > this.opts.chunkTokens ? splitLongUnit(raw, pieceMax) : [{ text: raw, tokens }];
      for (const unit of pieces) this.add(unit, out);
    }
    return out;
  }

  flush(): Chunk[] {
    const out: Chunk[] = [];
    this.endRun(out);
    this.key = undefined;
    return out;
  }

  private add(unit: Unit, out: Chunk[]): void {
    const max = this.opts.chunkTokens;
    if (this.tokens + unit.tokens > max && this.units.length > this.carried) {
      this.emit(out);
      this.startWithOverlap();
    }
    // Drop overlap until the new unit fits (overlap is a nicety; the size limit is not).
    while (this.tokens + unit.tokens > max && this.carried > 0) {
      const dropped = this.units.shift() as Unit;
      this.tokens -= dropped.tokens;
      this.carried--;
    }
    this.units.push(unit);
    this.tokens += unit.tokens;
  }

  private startWithOverlap(): void {
    const prev = this.units;
    this.units = [];
    this.tokens = 0;
    this.carried = 0;
    const budget = this.opts.overlapTokens;
    if (budget === 0) return;
    const keep: Unit[] = [];
    let t = 0;
    for (let i = prev.length - 1; i >= 0; i--) {
      if (t + prev[i].tokens > budget) break;
      keep.unshift(prev[i]);
      t += prev[i].tokens;
    }
    if (keep.length === 0 && prev.length > 0) {
      keep.push(tailTokens(prev[prev.length - 1].text, budget));
      t = keep[0].tokens;
    }
    this.units = keep.map((u) => ({ ...u }));
    this.tokens = t;
    this.carried = keep.length;
  }

  private endRun(out: Chunk[]): void {
    if (this.units.length > this.carried) this.emit(out);
    this.units = [];
    this.tokens = 0;
    this.carried = 0;
  }

  private emit(out: Chunk[]): void {
    const content = this.units.map((u) => u.text).join('').trim();
    if (content.length === 0) return;
    const chunk: Chunk = { index: this.nextIndex++, content, tokenCount: countTokens(content) };
    if (this.page !== undefined) chunk.page = this.page;
    if (this.section !== undefined) chunk.section = this.section;
    out.push(chunk);
  }
}

/** Chunks all sections at once. For huge inputs prefer `chunkTextStream` / `chunkTextAsync`. */
export function chunkText(sections: TextSection[], opts: ChunkOptions = DEFAULT_CHUNK_OPTIONS): Chunk[] {
  return [...chunkTextStream(sections, opts)];
}

/** Generator variant: yields chunks as soon as they are complete. */
export function* chunkTextStream(sections: Iterable<TextSection>, opts: ChunkOptions = DEFAULT_CHUNK_OPTIONS): Generator<Chunk> {
  const chunker = new Chunker(opts);
  for (const s of sections) yield* chunker.push(s);
  yield* chunker.flush();
}

/** Async generator variant, for sections read from a stream. */
export async function* chunkTextAsync(
  sections: AsyncIterable<TextSection> | Iterable<TextSection>,
  opts: ChunkOptions = DEFAULT_CHUNK_OPTIONS,
): AsyncGenerator<Chunk> {
  const chunker = new Chunker(opts);
  for await (const s of sections) yield* chunker.push(s);
  yield* chunker.flush();
}
