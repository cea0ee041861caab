import {
  Chunk,
  chunkText,
  chunkTextAsync,
  chunkTextStream,
  countTokens,
  DEFAULT_CHUNK_TOKENS,
  DEFAULT_OVERLAP_TOKENS,
  TextSection,
} from '../../src/processing/chunker';

/** Deterministic pseudo-random generator (xorshift32). */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x100000000;
  };
}

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'retrieval', 'knowledge', 'a', 'of', 'supercalifragilistic', '東京', 'café', '42'];
function randomText(rand: () => number, sentences: number): string {
  const out: string[] = [];
  for (let s = 0; s < sentences; s++) {
    const n = 1 + Math.floor(rand() * 30);
    const words = Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]);
    out.push(words.join(rand() < 0.1 ? ', ' : ' ') + (rand() < 0.5 ? '.' : '!'));
    if (rand() < 0.2) out.push('\n\n');
    else if (rand() < 0.1) out.push('\n');
  }
  return out.join(' ');
}

/** Words of a text, for checking that chunks cover it. */
const words = (t: string): string[] => t.split(/\s+/).filter(Boolean);

describe('countTokens', () => {
  it('counts words, punctuation and long words by 8-character pieces', () => {
    expect(countTokens('')).toBe(0);
    expect(countTokens('   \n\t ')).toBe(0);
    expect(countTokens('Hello, world!')).toBe(4);
    expect(countTokens('retrieval')).toBe(2); // 9 characters
    expect(countTokens('abcdefgh')).toBe(1);
    expect(countTokens('a'.repeat(30))).toBe(4);
    expect(countTokens("don't")).toBe(3); // don ' t
    expect(countTokens('東京タワー')).toBe(5); // one per CJK character
    expect(countTokens('naïve café')).toBe(2);
    expect(countTokens('x = f(1, 2);')).toBe(9);
  });

  it('is additive over whitespace-separated parts', () => {
    const rand = rng(7);
    const text = randomText(rand, 50);
    const parts = text.split(/\s+/);
    expect(parts.reduce((n, p) => n + countTokens(p), 0)).toBe(countTokens(text));
  });
});

describe('chunkText', () => {
  it('exports the documented defaults', () => {
    expect(DEFAULT_CHUNK_TOKENS).toBe(200);
    expect(DEFAULT_OVERLAP_TOKENS).toBe(40);
  });

  it('returns nothing for no text and one chunk for short text', () => {
    expect(chunkText([], { chunkTokens: 10, overlapTokens: 2 })).toEqual([]);
    expect(chunkText([{ text: '  \n ' }], { chunkTokens: 10, overlapTokens: 2 })).toEqual([]);
    expect(chunkText([{ text: 'One short sentence.', page: 3 }], { chunkTokens: 10, overlapTokens: 2 })).toEqual([
      { index: 0, content: 'One short sentence.', tokenCount: 4, page: 3 },
    ]);
  });

  it('cuts at sentence ends and carries whole sentences as overlap', () => {
    const text = 'One two three four. Five six seven eight. Nine ten eleven twelve. Thirteen fourteen fifteen sixteen.';
    // each sentence = 5 tokens
    const chunks = chunkText([{ text }], { chunkTokens: 12, overlapTokens: 5 });
    expect(chunks.map((c) => c.content)).toEqual([
      'One two three four. Five six seven eight.',
      'Five six seven eight. Nine ten eleven twelve.',
      'Nine ten eleven twelve. Thirteen fourteen fifteen sixteen.',
    ]);
    expect(chunks.map((c) => c.tokenCount)).toEqual([10, 10, 10]);
    expect(chunks.map((c) => c.index)).toEqual([0, 1, 2]);
  });

  it('without overlap, chunks partition the text', () => {
    const text = 'One two three four. Five six seven eight. Nine ten eleven twelve.';
    const chunks = chunkText([{ text }], { chunkTokens: 10, overlapTokens: 0 });
    expect(chunks.map((c) => c.content)).toEqual(['One two three four. Five six seven eight.', 'Nine ten eleven twelve.']);
  });

  it('prefers paragraph and line boundaries', () => {
    const text = 'First paragraph line\nsecond line here\n\nThird para';
    const chunks = chunkText([{ text }], { chunkTokens: 7, overlapTokens: 0 });
    expect(chunks.map((c) => c.content)).toEqual(['First paragraph line\nsecond line here', 'Third para']);
  });

  it('cuts a sentence longer than the chunk at token boundaries, with token overlap', () => {
    const text = Array.from({ length: 25 }, (_, i) => `w${i}`).join(' ');
    const chunks = chunkText([{ text }], { chunkTokens: 10, overlapTokens: 3 });
    // pieces of 10 - 3 tokens, each chunk after the first starting with the last 3 tokens of the one before
    expect(chunks[0].content).toBe('w0 w1 w2 w3 w4 w5 w6');
    expect(chunks[1].content).toBe('w4 w5 w6 w7 w8 w9 w10 w11 w12 w13');
    expect(chunks[2].content.startsWith('w11 w12 w13 w14')).toBe(true);
    for (const c of chunks) expect(c.tokenCount).toBeLessThanOrEqual(10);
    expect(chunks[chunks.length - 1].content.endsWith('w24')).toBe(true);
  });

  it('cuts a giant word without whitespace and never exceeds the size', () => {
    const text = 'x'.repeat(8 * 25 + 3);
    const chunks = chunkText([{ text }], { chunkTokens: 10, overlapTokens: 2 });
    for (const c of chunks) expect(c.tokenCount).toBeLessThanOrEqual(10);
    // without the overlap, the chunks put back together are the word
    const noOverlap = chunkText([{ text }], { chunkTokens: 10, overlapTokens: 0 });
    expect(noOverlap.map((c) => c.content).join('')).toBe(text);
  });

  it('never mixes pages or sections, and keeps them on every chunk', () => {
    const sections: TextSection[] = [
      { text: 'Page one text. More of page one.', page: 1 },
      { text: 'Page two text.', page: 2 },
      { text: 'Intro.', section: 'Install' },
      { text: 'Linux steps. Run it.', section: 'Install > Linux' },
      { text: 'More linux, second piece.', section: 'Install > Linux' },
    ];
    const chunks = chunkText(sections, { chunkTokens: 50, overlapTokens: 10 });
    expect(chunks).toEqual([
      { index: 0, content: 'Page one text. More of page one.', tokenCount: 9, page: 1 },
      { index: 1, content: 'Page two text.', tokenCount: 4, page: 2 },
      { index: 2, content: 'Intro.', tokenCount: 2, section: 'Install' },
      { index: 3, content: 'Linux steps. Run it.\n\nMore linux, second piece.', tokenCount: 12, section: 'Install > Linux' },
    ]);
  });

  it('does not carry overlap across a page or section change', () => {
    const chunks = chunkText(
      [
        { text: 'aa bb cc dd. ee ff gg hh.', page: 1 },
        { text: 'ii jj.', page: 2 },
      ],
      { chunkTokens: 5, overlapTokens: 4 },
    );
    expect(chunks.map((c) => [c.content, c.page])).toEqual([
      ['aa bb cc dd.', 1],
      ['ee ff gg hh.', 1],
      ['ii jj.', 2],
    ]);
  });

  it('rejects invalid options', () => {
    expect(() => chunkText([{ text: 'x' }], { chunkTokens: 0, overlapTokens: 0 })).toThrow(RangeError);
    expect(() => chunkText([{ text: 'x' }], { chunkTokens: 10, overlapTokens: 10 })).toThrow(RangeError);
    expect(() => chunkText([{ text: 'x' }], { chunkTokens: 10, overlapTokens: -1 })).toThrow(RangeError);
    expect(() => chunkText([{ text: 'x' }], { chunkTokens: 1.5, overlapTokens: 0 })).toThrow(RangeError);
  });

  describe('properties over random texts', () => {
    const cases: [number, number, number][] = [
      [1, 200, 40],
      [2, 50, 10],
      [3, 20, 19],
      [4, 5, 0],
      [5, 1, 0],
      [6, 33, 7],
    ];
    it.each(cases)('seed %i, %i tokens, %i overlap', (seed, chunkTokens, overlapTokens) => {
      const rand = rng(seed);
      const sections: TextSection[] = [];
      for (let i = 0; i < 8; i++) sections.push({ text: randomText(rand, 1 + Math.floor(rand() * 40)), page: 1 + Math.floor(i / 3) });
      const chunks = chunkText(sections, { chunkTokens, overlapTokens });
      chunks.forEach((c, i) => {
        expect(c.index).toBe(i);
        expect(c.content).toBe(c.content.trim());
        expect(c.content.length).toBeGreaterThan(0);
        expect(c.tokenCount).toBe(countTokens(c.content));
        expect(c.tokenCount).toBeLessThanOrEqual(chunkTokens);
      });
      // Every word of every page appears, in order, in that page's chunks (modulo word pieces cut
      // at chunk ends, compared as joined characters).
      for (const page of new Set(sections.map((s) => s.page))) {
        const source = words(sections.filter((s) => s.page === page).map((s) => s.text).join(' ')).join('');
        const pageChunks = chunks.filter((c) => c.page === page);
        if (overlapTokens === 0) {
          expect(pageChunks.map((c) => words(c.content).join('')).join('')).toBe(source);
        } else {
          let at = 0;
          for (const c of pageChunks) {
            const w = words(c.content).join('');
            const found = source.indexOf(w, Math.max(0, at - w.length));
            expect(found).toBeGreaterThanOrEqual(0);
            expect(found).toBeLessThanOrEqual(at); // starts within what was already covered (overlap) or right after
            at = found + w.length;
          }
          expect(at).toBe(source.length);
        }
      }
    });
  });

  it('the generator and async variants give the same chunks as chunkText', async () => {
    const rand = rng(99);
    const sections = Array.from({ length: 5 }, (_, i) => ({ text: randomText(rand, 30), section: i < 3 ? 'A' : 'B' }));
    const opts = { chunkTokens: 40, overlapTokens: 8 };
    const expected = chunkText(sections, opts);
    expect([...chunkTextStream(sections, opts)]).toEqual(expected);
    async function* gen() {
      for (const s of sections) yield s;
    }
    const got: Chunk[] = [];
    for await (const c of chunkTextAsync(gen(), opts)) got.push(c);
    expect(got).toEqual(expected);
  });

  it('streams: the first chunks come out before the input is exhausted', () => {
    let pulled = 0;
    function* endless(): Generator<TextSection> {
      for (;;) {
        pulled++;
        yield { text: 'Some sentence of text. '.repeat(20) };
      }
    }
    const it = chunkTextStream(endless(), { chunkTokens: 50, overlapTokens: 5 });
    const first = it.next();
    expect(first.done).toBe(false);
    expect(pulled).toBeLessThanOrEqual(2);
  });
});
