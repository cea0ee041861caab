import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { chunkText, splitUnits } from '../../src/processing/chunker';
import { closeIdleExtractionWorkers, extractText } from '../../src/processing/extract';
import { atxHeading, boundedSections, fileLines, headingText, htmlSections, MAX_HEADING_CHARS, MAX_SECTION_CHARS } from '../../src/processing/extractWorker';
import { normalizeText } from '../../src/processing/normalize';
import { docx, entry } from '../support/zipBomb';

// Files of one huge line (a 50 MB Markdown file of one line ended CORRUPT after a minute, over
// the worker's heap): every step is linear and holds at most a piece of such a line.
// extractText runs the compiled worker from dist/ (jest's globalSetup, or `npm run build`).

const UNIT_END_RE = /\n+|[.!?…。！？]+["'”’)\]]*[ \t]+|[。！？]/gu;
const ATX_HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;

/** The units as the regular expression cut them (the chunker's definition before the scanner). */
function unitsByRegex(text: string): string[] {
  const out: string[] = [];
  let last = 0;
  for (const m of text.matchAll(UNIT_END_RE)) {
    const end = (m.index ?? 0) + m[0].length;
    if (end > last) {
      out.push(text.slice(last, end));
      last = end;
    }
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

const textOf = (alphabet: string[], maxLength = 60) => fc.array(fc.constantFrom(...alphabet), { maxLength }).map((a) => a.join(''));

describe('sentence units', () => {
  it('are cut where the regular expression cut them', () => {
    const alphabet = ['a', 'b', ' ', '\t', '\n', '.', '!', '?', '…', '。', '！', '？', '"', "'", '”', '’', ')', ']', '(', '\r', '😀'];
    fc.assert(
      fc.property(textOf(alphabet), (text) => {
        expect(splitUnits(text)).toEqual(unitsByRegex(text));
      }),
      { numRuns: 3000 },
    );
    for (const text of ['Hello. World', 'a.") b', '数字。数字', 'x...\n\ny', '."."  z', '!!!', '。。。a', "')"]) expect(splitUnits(text)).toEqual(unitsByRegex(text));
  });

  it('a long run of punctuation with no space after it is one unit, chunked by tokens', () => {
    const dots = '.'.repeat(300_000);
    expect(splitUnits(dots)).toEqual([dots]);
    const chunks = chunkText([{ text: `${dots} end` }]);
    expect(chunks.length).toBeGreaterThan(1000);
    expect(chunks.every((c) => c.tokenCount <= 200)).toBe(true);
  });
});

describe('ATX headings', () => {
  it('read as the regular expression read them', () => {
    const alphabet = ['#', '#', ' ', ' ', '\t', 'a', 'b', '\r', '\u2028', 'é'];
    fc.assert(
      fc.property(textOf(alphabet, 20), (line) => {
        const m = ATX_HEADING.exec(line);
        expect(atxHeading(line)).toEqual(m ? { level: m[1].length, text: m[2] } : undefined);
      }),
      { numRuns: 5000 },
    );
  });

  it('keep at most MAX_HEADING_CHARS characters of a heading', () => {
    const long = Array.from({ length: 5000 }, (_, i) => `word${i}`).join(' ');
    const h = headingText(long);
    expect(h.length).toBeLessThanOrEqual(MAX_HEADING_CHARS);
    expect(long.startsWith(h)).toBe(true);
    expect(headingText('  Install \t Linux  ')).toBe('Install Linux');
  });
});

describe('a long .docx body (mammoth\'s HTML)', () => {
  const paragraph = (i: number): string => `<p>Paragraph ${i} says: ${Array.from({ length: 40 }, (_, k) => ['refund', 'policy.', 'shipping', '"quoted"', 'café'][(i + k) % 5]).join(' ')}</p>`;

  it('comes in pieces at paragraph ends whose chunks are those of the body whole', () => {
    const html = `<h1>Terms</h1>${Array.from({ length: 4000 }, (_, i) => paragraph(i)).join('')}<h2>After</h2><p>Tail.</p>`;
    const sections = [...htmlSections(html)];
    const terms = sections.filter((s) => s.section === 'Terms');
    expect(terms.length).toBeGreaterThan(2);
    expect(terms.every((s) => s.text.length <= 2 * 256 * 1024)).toBe(true);
    const whole = [{ text: terms.map((s) => s.text).join('\n\n'), section: 'Terms' }, ...sections.filter((s) => s.section !== 'Terms')];
    expect(chunkText(sections)).toEqual(chunkText(whole));
  });

  it('a paragraph of 3 MB is cut into pieces of at most 512 Ki characters, its text whole', () => {
    const words = Array.from({ length: 400_000 }, (_, i) => ['harbour', 'granite', 'tide'][i % 3]).join(' ');
    const sections = [...htmlSections(`<p>${words}</p>`)];
    expect(sections.length).toBeGreaterThan(4);
    expect(sections.every((s) => s.text.length <= 2 * 256 * 1024)).toBe(true);
    expect(sections.map((s) => s.text).join(' ')).toBe(words);
  });
});

describe('sections of any extractor (a PDF page, a legacy .doc)', () => {
  it('a long one is cut at paragraph ends into pieces of its page, with the chunks of the whole', () => {
    const text = Array.from({ length: 12000 }, (_, i) => `Paragraph ${i}: the refund policy covers orders shipped within a week of purchase.`).join('\n\n');
    const pieces = [{ text: 'Short page.', page: 1 }, { text, page: 2 }].flatMap((s) => boundedSections(s));
    expect(pieces[0]).toEqual({ text: 'Short page.', page: 1 });
    const page2 = pieces.slice(1);
    expect(page2.length).toBeGreaterThan(1);
    expect(page2.every((p) => p.page === 2 && p.text.length <= MAX_SECTION_CHARS)).toBe(true);
    expect(page2.map((p) => p.text).join('')).toBe(text);
    const normalized = page2.map((p) => ({ ...p, text: normalizeText(p.text) }));
    expect(chunkText(normalized)).toEqual(chunkText([{ text, page: 2 }]));
  });

  it('a paragraph of 5 MB, or one word of it, is cut within it, its text whole', () => {
    for (const text of [Array.from({ length: 700_000 }, (_, i) => ['tide', 'granite'][i % 2]).join(' '), 'é😀x'.repeat(1_300_000)]) {
      const pieces = boundedSections({ text });
      expect(pieces.length).toBeGreaterThan(4);
      expect(pieces.every((p) => p.text.length <= MAX_SECTION_CHARS)).toBe(true);
      expect(pieces.map((p) => p.text).join('')).toBe(text);
      expect(pieces.every((p) => !/[\ud800-\udbff]$/.test(p.text))).toBe(true);
    }
  });
});

describe('lines of a file', () => {
  it('a line longer than the bound comes in pieces that join back to it', async () => {
    const line = Array.from({ length: 3000 }, (_, i) => `w${i}`).join(' ');
    const text = `first\r\n${line}\nlast\n\n${'x'.repeat(2500)}`;
    const pieces: { text: string; continued: boolean }[] = [];
    for await (const p of fileLines('', text, 1000)) pieces.push(p);
    expect(pieces.every((p) => p.text.length <= 1000)).toBe(true);
    const lines: string[] = [];
    for (const p of pieces) {
      if (p.continued) lines[lines.length - 1] += p.text;
      else lines.push(p.text);
    }
    expect(lines).toEqual(['first', line, 'last', '', 'x'.repeat(2500)]);
    expect(pieces.filter((p) => p.continued).length).toBeGreaterThan(10);
  });
});

describe('a Markdown or text file of one huge line', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'kb-long-line-'));
  });
  afterAll(async () => {
    await closeIdleExtractionWorkers();
    await rm(dir, { recursive: true, force: true });
  });

  // 12 MB in a worker of 96 MB of heap: the whole line held (and copied by normalisation) does not fit.
  const SIZE = 12 * 1024 * 1024;
  const HEAP_MB = 96;
  const words = (): string => {
    const w = ['harbour', 'granite', 'lantern', 'meadow', 'quartz', 'tide', 'ledger', 'café'];
    const parts: string[] = [];
    let size = 0;
    for (let i = 0; size < SIZE; i++) {
      const word = w[(i * 7 + (i >> 3)) % w.length];
      parts.push(word);
      size += word.length + 1;
    }
    return parts.join(' ');
  };

  it.each(['md', 'txt'] as const)('one line of words (.%s) is extracted and chunked, its text whole', async (kind) => {
    const text = words();
    const file = path.join(dir, `words.${kind}`);
    await writeFile(file, text);
    const r = await extractText(file, kind, { timeoutMs: 120_000, maxHeapMb: HEAP_MB, chunking: { chunkTokens: 200, overlapTokens: 40 } });
    expect(r.sections.length).toBeGreaterThan(10);
    expect(r.sections.map((s) => s.text).join(' ')).toBe(normalizeText(text));
    expect(r.chunks?.length).toBeGreaterThan(10_000);
    expect(r.chunks?.every((c) => c.tokenCount <= 200)).toBe(true);
  });

  it('one "word" of 12 MB with no space (.md) is extracted whole', async () => {
    const text = 'abcdefghijklmnopqrstuvwxyz'.repeat(Math.ceil(SIZE / 26));
    const file = path.join(dir, 'word.md');
    await writeFile(file, text);
    const r = await extractText(file, 'md', { timeoutMs: 120_000, maxHeapMb: HEAP_MB, chunking: { chunkTokens: 200, overlapTokens: 40 } });
    expect(r.sections.map((s) => s.text).join('')).toBe(text);
    expect(r.chunks?.every((c) => c.tokenCount <= 200)).toBe(true);
  });

  it('a .docx nested 20,000 tables deep fails CORRUPT with a message that says so', async () => {
    const depth = 20_000;
    const xml =
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>' +
      '<w:tbl><w:tr><w:tc>'.repeat(depth) +
      '<w:p><w:r><w:t>deep</w:t></w:r></w:p>' +
      '</w:tc></w:tr></w:tbl>'.repeat(depth) +
      '</w:body></w:document>';
    const file = path.join(dir, 'nested.docx');
    await writeFile(file, docx(entry('word/document.xml', xml)));
    await expect(extractText(file, 'docx', { timeoutMs: 60_000 })).rejects.toMatchObject({ code: 'CORRUPT', message: expect.stringContaining('too deeply') });
  });

  it('a heading line of 1 MB gives a section path of at most MAX_HEADING_CHARS, and its text stays', async () => {
    const heading = words().slice(0, 1024 * 1024);
    const file = path.join(dir, 'heading.md');
    await writeFile(file, `# ${heading}\n\nBody text under it.\n`);
    const r = await extractText(file, 'md', { timeoutMs: 60_000, maxHeapMb: HEAP_MB });
    expect(r.sections.every((s) => (s.section ?? '').length <= MAX_HEADING_CHARS)).toBe(true);
    expect(r.sections[0].section).toBe(headingText(heading));
    expect(r.sections.map((s) => s.text).join(' ')).toBe(normalizeText(`# ${heading}\n\nBody text under it.`).replace(/\n\n/, ' '));
  });
});
