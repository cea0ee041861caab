/**
 * Worker-thread side of `extractText` (see extract.ts). Loaded as compiled JS from dist/.
 * Takes one job at a time from its parent (a reused worker gets the next after `done`).
 * Streams sections (and, asked to, chunks) to the parent in batches, so neither side holds
 * more than a batch plus what the parent accumulates.
 */
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { isMainThread, parentPort } from 'node:worker_threads';
import type Mammoth from 'mammoth';
import type * as PdfParse from 'pdf-parse';
import type WordExtractorClass from 'word-extractor';
import { Chunk, Chunker, countTokens } from './chunker';
import type { DocumentKind } from './detectType';
import { DEFAULT_EXTRACTION_LIMITS, ExtractedPiece, ExtractedSection, ExtractionError, ExtractionLimits, ExtractJob, ExtractWorkerMessage, ExtractWorkerRequest, textLimitError } from './extract';
import { ByteBatcher } from '../domain/eventSize';
import { sectionPieces } from '../domain/document/eventParts';
import { normalizeInline, normalizeText } from './normalize';
import { openBoundedZip, ZipPackageError } from './zipPackage';
import { lowerThisThreadPriority } from '../util/threadPriority';

// The parsers load on first use: a worker extracting a .txt or .md file (most uploads)
// starts in a few milliseconds instead of ~300 ms spent loading pdf.js and mammoth.
/* eslint-disable @typescript-eslint/no-require-imports */
const pdfParse = (): typeof PdfParse => require('pdf-parse') as typeof PdfParse;
const mammoth = (): typeof Mammoth => require('mammoth') as typeof Mammoth;

/** Text files are read and handed on in pieces of about this many characters. */
const PIECE_CHARS = 256 * 1024;
const BATCH_CHARS = 1024 * 1024;
const HEADING_SEPARATOR = ' > ';

/** `inline`: the text of a .txt or .md "file" given in memory (the warm-up's sample) instead of reading `filePath`. */
export async function* extractSections(filePath: string, kind: DocumentKind, limits: ExtractionLimits = DEFAULT_EXTRACTION_LIMITS, inline?: string): AsyncGenerator<ExtractedSection> {
  switch (kind) {
    case 'pdf':
      yield* pdfSections(filePath, limits);
      return;
    case 'docx':
      yield* docxSections(filePath, limits);
      return;
    case 'doc':
      yield* docSections(filePath, limits);
      return;
    case 'txt':
      yield* textSections(filePath, inline);
      return;
    case 'md':
      yield* markdownSections(filePath, inline);
      return;
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// ---- PDF: page by page, one section per page with text ------------------------------------

function limitError(message: string): ExtractionError {
  return new ExtractionError('EXTRACTION_LIMIT_EXCEEDED', message);
}

async function* pdfSections(filePath: string, limits: ExtractionLimits): AsyncGenerator<ExtractedSection> {
  const data = await readFile(filePath);
  const { PDFParse, PasswordException } = pdfParse();
  const parser = new PDFParse({
    data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    isEvalSupported: false, // never compile code from a hostile font
    verbosity: 0,
  });
  try {
    let total = 1;
    for (let page = 1; page <= total; page++) {
      let text: string;
      try {
        const result = await parser.getText({ partial: [page] });
        total = result.total;
        text = result.pages[0]?.text ?? '';
      } catch (err) {
        if (err instanceof ExtractionError) throw err;
        if (err instanceof PasswordException) {
          throw new ExtractionError('ENCRYPTED', 'the PDF is password-protected; upload a copy without a password');
        }
        throw new ExtractionError('CORRUPT', `the PDF could not be read (${describe(err)})`);
      }
      // Known from the first page on: refuse before reading the rest.
      if (total > limits.maxPdfPages) {
        throw limitError(`the PDF has ${total} pages, more than the ${limits.maxPdfPages} allowed (KB_MAX_PDF_PAGES); split the document or raise the limit`);
      }
      const normalized = normalizeText(text);
      if (normalized) yield { text: normalized, page };
    }
  } finally {
    await parser.destroy().catch(() => undefined);
  }
}

// ---- .docx: mammoth's HTML, split at headings -----------------------------------------------

/** Images are not text: never read them (mammoth would inline each one as base64). */
const noImages = (): ReturnType<typeof Mammoth.images.imgElement> => mammoth().images.imgElement(() => Promise.resolve({ src: '' }));

async function* docxSections(filePath: string, limits: ExtractionLimits): AsyncGenerator<ExtractedSection> {
  let html: string;
  try {
    // mammoth reads the package through this bounded view (its `file` input), never JSZip's.
    const pkg = await openBoundedZip(filePath, { maxBytes: limits.maxExtractedBytes, maxEntries: limits.maxZipEntries });
    try {
      const file = {
        exists: (name: string) => pkg.exists(name),
        read: async (name: string, encoding?: string) => {
          const data = await pkg.read(name);
          if (encoding === 'base64') return data.toString('base64');
          return encoding ? new TextDecoder(encoding).decode(data) : data;
        },
      };
      const input = { file } as unknown as Parameters<typeof Mammoth.convertToHtml>[0];
      html = (await mammoth().convertToHtml(input, { ignoreEmptyParagraphs: true, convertImage: noImages() })).value;
    } finally {
      await pkg.close();
    }
  } catch (err) {
    if (err instanceof ZipPackageError && err.kind !== 'corrupt') {
      const setting = err.kind === 'entries' ? 'KB_MAX_ZIP_ENTRIES' : 'KB_MAX_EXTRACTED_BYTES';
      throw limitError(`the Word document was refused: ${err.message} (${setting})`);
    }
    if (err instanceof RangeError && /call stack/i.test(err.message)) {
      // mammoth reads the XML recursively: thousands of nested tables or elements exhaust the stack (in well under a second).
      throw new ExtractionError('CORRUPT', 'the Word document nests tables or other elements too deeply to be read; flatten it or save it again');
    }
    throw new ExtractionError('CORRUPT', `the Word document could not be read (${describe(err)})`);
  }
  yield* htmlSections(html);
}

// A Map: `&constructor;` in a document must not find Object's own properties.
const ENTITIES = new Map<string, string>([
  ['amp', '&'],
  ['lt', '<'],
  ['gt', '>'],
  ['quot', '"'],
  ['apos', "'"],
  ['nbsp', '\u00a0'],
]);

function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (m, e: string) => {
    if (e[0] === '#') {
      const cp = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return Number.isFinite(cp) && cp <= 0x10ffff ? String.fromCodePoint(cp) : m;
    }
    return ENTITIES.get(e.toLowerCase()) ?? m;
  });
}

/** Sections of mammoth's (simple, well-formed) HTML: text between headings, with the heading path. */
export function* htmlSections(html: string): Generator<ExtractedSection> {
  const headings: string[] = [];
  let body = '';
  let heading: { level: number; text: string } | undefined;
  const path = (): string | undefined => (headings.some(Boolean) ? headings.filter(Boolean).join(HEADING_SEPARATOR) : undefined);
  const flush = function* (): Generator<ExtractedSection> {
    const text = normalizeText(body);
    body = '';
    if (!text) return;
    const section = path();
    yield section === undefined ? { text } : { text, section };
  };
  // A long body is handed on in pieces of the same section, as Markdown's are: at a paragraph
  // end once it has PIECE_CHARS characters (the chunks are the same as from one piece), and
  // within a paragraph of more than twice that, after a line end or space when one is near
  // (a 50 MB paragraph held whole needed more than the worker's 512 MB).
  const flushHead = function* (): Generator<ExtractedSection> {
    const max = 2 * PIECE_CHARS;
    let cut = body.lastIndexOf('\n', max - 1) + 1;
    if (cut < PIECE_CHARS) cut = body.lastIndexOf(' ', max - 1) + 1;
    if (cut < PIECE_CHARS) cut = max;
    const c = body.charCodeAt(cut - 1);
    if (c >= 0xd800 && c <= 0xdbff) cut -= 1;
    const rest = body.slice(cut);
    body = body.slice(0, cut);
    yield* flush();
    body = rest;
  };
  const tokens = /<(\/?)([a-z0-9]+)[^>]*>|([^<]+)/gi;
  for (const m of html.matchAll(tokens)) {
    const [, closing, tagName, textPart] = m;
    if (textPart !== undefined) {
      const text = decodeEntities(textPart);
      if (heading) heading.text += text;
      else {
        body += text;
        while (body.length >= 2 * PIECE_CHARS) yield* flushHead();
      }
      continue;
    }
    const tag = tagName.toLowerCase();
    const level = /^h[1-6]$/.test(tag) ? Number(tag[1]) : 0;
    if (level && !closing) {
      yield* flush();
      heading = { level, text: '' };
    } else if (level && closing && heading) {
      headings.length = heading.level - 1;
      headings[heading.level - 1] = headingText(heading.text);
      heading = undefined;
    } else if (tag === 'br') {
      if (heading) heading.text += ' ';
      else body += '\n';
    } else if (closing && (tag === 'p' || tag === 'li' || tag === 'tr' || tag === 'table' || tag === 'ul' || tag === 'ol')) {
      body += '\n\n';
      if (body.length >= PIECE_CHARS) yield* flush();
    } else if (closing && (tag === 'td' || tag === 'th')) {
      body += '\t';
    }
  }
  yield* flush();
}

// ---- .doc: word-extractor ---------------------------------------------------------------------

async function* docSections(filePath: string, limits: ExtractionLimits): AsyncGenerator<ExtractedSection> {
  let text: string;
  // word-extractor loads the whole compound file into memory: bound what it may load.
  const { size } = await stat(filePath);
  if (size > limits.maxExtractedBytes) {
    throw limitError(`the Word 97-2003 document is ${size} bytes, more than the ${limits.maxExtractedBytes} allowed (KB_MAX_EXTRACTED_BYTES)`);
  }
  try {
    const WordExtractor = require('word-extractor') as typeof WordExtractorClass;
    const doc = await new WordExtractor().extract(filePath);
    text = [doc.getBody(), doc.getFootnotes(), doc.getEndnotes()].join('\n\n');
  } catch (err) {
    throw new ExtractionError('CORRUPT', `the Word 97-2003 document could not be read (${describe(err)})`);
  }
  const normalized = normalizeText(text);
  if (normalized) yield { text: normalized };
}

// ---- text files: streamed ------------------------------------------------------------------

/** Decoded text of a UTF-8 file in pieces (BOM dropped, invalid bytes replaced); `inline` instead, when given. */
async function* decodeFile(filePath: string, inline?: string): AsyncGenerator<string> {
  if (inline !== undefined) {
    yield inline;
    return;
  }
  const decoder = new TextDecoder('utf-8');
  for await (const buf of createReadStream(filePath, { highWaterMark: 64 * 1024 })) {
    const s = decoder.decode(buf as Buffer, { stream: true });
    if (s) yield s;
  }
  const rest = decoder.decode();
  if (rest) yield rest;
}

async function* textSections(filePath: string, inline?: string): AsyncGenerator<ExtractedSection> {
  let buf = '';
  const emit = (piece: string): ExtractedSection | undefined => {
    const text = normalizeText(piece);
    return text ? { text } : undefined;
  };
  for await (const s of decodeFile(filePath, inline)) {
    buf += s;
    if (buf.length < PIECE_CHARS) continue;
    // Cut at a paragraph break, else a line end, else a space (normalisation is line-local).
    let cut = buf.lastIndexOf('\n\n');
    if (cut < buf.length / 2) cut = buf.lastIndexOf('\n');
    if (cut < buf.length / 2) cut = buf.lastIndexOf(' ');
    if (cut < buf.length / 2) cut = buf.length;
    const section = emit(buf.slice(0, cut));
    buf = buf.slice(cut);
    if (section) yield section;
  }
  const last = emit(buf);
  if (last) yield last;
}

/**
 * A line longer than this many characters is handed on in pieces (see `fileLines`), so that no
 * step (the line split, the heading and fence tests, normalisation, chunking) ever holds or
 * scans a whole huge line: a 50 MB file of one line costs what a 50 MB file of short lines does.
 */
export const MAX_LINE_PIECE_CHARS = PIECE_CHARS;

/** A line, or a piece of a long one (`continued`: it goes on the line of the piece before). */
export interface LinePiece {
  text: string;
  continued: boolean;
}

/** Where to cut a long line: after the last space in its first `max` characters when one is in its second half, else at `max` (never inside a surrogate pair or a CRLF). */
function lineCut(text: string, max: number): number {
  const space = text.lastIndexOf(' ', max - 1);
  let cut = space >= max / 2 ? space + 1 : max;
  const before = text.charCodeAt(cut - 1);
  if ((before >= 0xd800 && before <= 0xdbff) || before === 0x0d) cut -= 1;
  return cut;
}

/**
 * Lines of a file, streamed (without their line ends: LF or CRLF). A line longer than
 * `maxLine` characters comes in pieces of at most `maxLine` (each after the first `continued`);
 * what is held is one read plus at most one piece, whatever the length of the line.
 */
export async function* fileLines(filePath: string, inline?: string, maxLine = MAX_LINE_PIECE_CHARS): AsyncGenerator<LinePiece> {
  let carry = '';
  let continued = false;
  for await (const s of decodeFile(filePath, inline)) {
    const buf = carry + s;
    let start = 0;
    for (let end = buf.indexOf('\n'); end >= 0; end = buf.indexOf('\n', start)) {
      let line = buf.slice(start, end > start && buf.charCodeAt(end - 1) === 0x0d ? end - 1 : end);
      while (line.length > maxLine) {
        const cut = lineCut(line, maxLine);
        yield { text: line.slice(0, cut), continued };
        continued = true;
        line = line.slice(cut);
      }
      yield { text: line, continued };
      continued = false;
      start = end + 1;
    }
    let rest = buf.slice(start);
    while (rest.length > maxLine) {
      const cut = lineCut(rest, maxLine);
      yield { text: rest.slice(0, cut), continued };
      continued = true;
      rest = rest.slice(cut);
    }
    carry = rest;
  }
  if (carry) yield { text: carry, continued };
}

/** Heading text is kept to this many characters (it is every chunk's `section` under it). */
export const MAX_HEADING_CHARS = 1000;

/**
 * An ATX heading line (`## Title ##`): its level and its text (undefined for a bare `#`), or
 * undefined. The same answer as the regular expression
 * /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/ (checked by a test), without its
 * backtracking, which takes time quadratic in a long line's length.
 */
export function atxHeading(line: string): { level: number; text: string | undefined } | undefined {
  let i = 0;
  while (i < 3 && line.charCodeAt(i) === 0x20) i++;
  let level = 0;
  while (line.charCodeAt(i + level) === 0x23 /* # */ && level < 7) level++;
  if (level < 1 || level > 6) return undefined;
  const rest = line.slice(i + level);
  if (rest === '') return { level, text: undefined };
  if (!isBlank(rest.charCodeAt(0))) return undefined;
  // `.` matches no line terminator: such a character anywhere makes the line no heading.
  if (/[\r\u2028\u2029]/.test(rest)) return undefined;
  let from = 0;
  while (from < rest.length && isBlank(rest.charCodeAt(from))) from++;
  let to = rest.length;
  while (to > from && isBlank(rest.charCodeAt(to - 1))) to--;
  // A closing sequence: blanks then #s at the end (the blanks inside the text, not the opening ones).
  let hashes = to;
  while (hashes > from && rest.charCodeAt(hashes - 1) === 0x23) hashes--;
  if (hashes < to && hashes > from && isBlank(rest.charCodeAt(hashes - 1))) {
    to = hashes;
    while (to > from && isBlank(rest.charCodeAt(to - 1))) to--;
  }
  return { level, text: rest.slice(from, to) };
}

const isBlank = (c: number): boolean => c === 0x20 || c === 0x09;

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const SETEXT_UNDERLINE = /^ {0,3}(=+|-+)[ \t]*$/;
const NOT_PARAGRAPH_TEXT = /^ {0,3}(?:[-*+>]|\d+[.)]|#|`{3}|~{3}|\|)|^\s*$/;

/**
 * Markdown, streamed line by line: the text under each heading becomes a section whose
 * `section` is the heading path ("Install > Linux"). ATX and setext headings; `#` lines
 * inside fenced code are code. The text keeps its Markdown, headings included, so the
 * document reads whole (instruction sets serve it verbatim) and headings are searchable.
 */
async function* markdownSections(filePath: string, inline?: string): AsyncGenerator<ExtractedSection> {
  const headings: string[] = [];
  let lines: string[] = [];
  let chars = 0;
  let fence: string | undefined;
  /** The last of `lines` is the line read last (so a piece continuing it is appended to it). */
  let lineOpen = false;
  const path = (): string | undefined => (headings.some(Boolean) ? headings.filter(Boolean).join(HEADING_SEPARATOR) : undefined);
  const flush = (): ExtractedSection | undefined => {
    const text = normalizeText(lines.join('\n'));
    lines = [];
    chars = 0;
    lineOpen = false;
    if (!text) return undefined;
    const section = path();
    return section === undefined ? { text } : { text, section };
  };
  const setHeading = (level: number, text: string): void => {
    headings.length = level - 1;
    headings[level - 1] = headingText(text);
  };
  const push = (line: string): void => {
    lines.push(line);
    chars += line.length + 1;
    lineOpen = true;
  };

  for await (const { text: line, continued } of fileLines(filePath, inline)) {
    if (continued) {
      // The rest of a long line: text of the line it continues, never a heading or fence of its own.
      if (lineOpen) {
        lines[lines.length - 1] += line;
        chars += line.length;
      } else push(line);
    } else if (fence !== undefined) {
      push(line);
      const close = FENCE.exec(line);
      if (close && close[1][0] === fence[0] && close[1].length >= fence.length && line.trim() === close[1]) fence = undefined;
    } else if (FENCE.test(line)) {
      fence = (FENCE.exec(line) as RegExpExecArray)[1];
      lines.push(line);
      lineOpen = true;
    } else if (atxHeading(line)) {
      const m = atxHeading(line) as { level: number; text: string | undefined };
      const done = flush();
      if (done) yield done;
      setHeading(m.level, m.text ?? '');
      if ((m.text ?? '').trim()) push(line);
    } else if (SETEXT_UNDERLINE.test(line) && lines.length > 0 && !NOT_PARAGRAPH_TEXT.test(lines[lines.length - 1])) {
      const title = lines.pop() as string;
      const done = flush();
      if (done) yield done;
      setHeading(line.trim()[0] === '=' ? 1 : 2, title);
      lines.push(title, line);
      chars += title.length + line.length + 2;
      lineOpen = true;
    } else {
      push(line);
    }
    // Hand long sections on in pieces, at a blank line when possible.
    if (chars >= PIECE_CHARS && (line.trim() === '' || chars >= 2 * PIECE_CHARS)) {
      const done = flush();
      if (done) yield done;
    }
  }
  const done = flush();
  if (done) yield done;
}

/** A heading's text as its section path shows it: on one line, at most MAX_HEADING_CHARS characters (cut at a word when one ends near). */
export function headingText(text: string): string {
  const inline = normalizeInline(text.length > 4 * MAX_HEADING_CHARS ? text.slice(0, 4 * MAX_HEADING_CHARS) : text);
  if (inline.length <= MAX_HEADING_CHARS) return inline;
  let cut = inline.lastIndexOf(' ', MAX_HEADING_CHARS);
  if (cut < MAX_HEADING_CHARS / 2) cut = MAX_HEADING_CHARS;
  const c = inline.charCodeAt(cut - 1);
  if (c >= 0xd800 && c <= 0xdbff) cut -= 1;
  return inline.slice(0, cut).trimEnd();
}

// ---- worker entry -----------------------------------------------------------------------------

/** A section longer than this many characters goes on in pieces (see `boundedSections`). */
export const MAX_SECTION_CHARS = 2 * PIECE_CHARS;

/**
 * A section of any extractor longer than `max` characters, cut into pieces of the same page
 * and section: at a paragraph end when one is in the second half of the window (the chunks are
 * then those of the section whole), else a line end, else a space, else at the bound (never
 * inside a surrogate pair). Normalising, chunking and cutting into events' payloads then never
 * hold more than a piece: a PDF page or a legacy .doc of one huge paragraph costs what many
 * short ones do. Markdown, text and .docx already come in pieces. A short section: itself.
 */
export function boundedSections(s: ExtractedSection, max = MAX_SECTION_CHARS): ExtractedSection[] {
  if (s.text.length <= max) return [s];
  const out: ExtractedSection[] = [];
  let rest = s.text;
  while (rest.length > max) {
    let cut = rest.lastIndexOf('\n\n', max - 2) + 2;
    if (cut < max / 2) cut = rest.lastIndexOf('\n', max - 1) + 1;
    if (cut < max / 2) cut = rest.lastIndexOf(' ', max - 1) + 1;
    if (cut < max / 2) cut = max;
    const c = rest.charCodeAt(cut - 1);
    if (c >= 0xd800 && c <= 0xdbff) cut -= 1;
    out.push({ ...s, text: rest.slice(0, cut) });
    rest = rest.slice(cut);
  }
  out.push({ ...s, text: rest });
  return out;
}

async function run(job: ExtractJob, send: (msg: ExtractWorkerMessage) => void, inline?: string): Promise<void> {
  try {
    let batch: ExtractedSection[] = [];
    let batchChars = 0;
    let anyText = false;
    let textBytes = 0;
    // Chunks and the token count of the text, when the parent asks; with `eventParts`, the
    // text and the chunks cut into events' payloads as they come (the parent appends them as they are).
    const chunker = job.chunking ? new Chunker(job.chunking) : undefined;
    const parts = job.eventParts;
    const pieceBatcher = parts ? new ByteBatcher<ExtractedPiece>(parts.budget) : undefined;
    const chunkBatcher = parts ? new ByteBatcher<Chunk>(parts.budget, parts.maxChunks) : undefined;
    let chunks: Chunk[] = [];
    let chunkChars = 0;
    let tokenCount = 0;
    let sizeBytes = 0;
    let sectionCount = 0;
    const sendChunks = (): void => {
      if (chunks.length > 0) send({ type: 'chunks', chunks });
      chunks = [];
      chunkChars = 0;
    };
    let chunkCount = 0;
    const addChunks = (more: Chunk[]): void => {
      // Checked as the chunks are made: a file of tiny sections is refused at the bound, not after all of its chunks.
      chunkCount += more.length;
      if (chunkCount > job.limits.maxChunks) {
        throw limitError(`the document makes more than ${job.limits.maxChunks} chunks (KB_MAX_CHUNKS_PER_DOCUMENT); each heading starts a chunk: a file of many tiny sections makes one per section`);
      }
      for (const c of more) {
        if (chunkBatcher) {
          const full = chunkBatcher.push(c);
          if (full) send({ type: 'chunkBatch', chunks: full });
          continue;
        }
        chunks.push(c);
        chunkChars += c.content.length;
      }
      if (chunkChars >= BATCH_CHARS) sendChunks();
    };
    for await (const whole of extractSections(job.filePath, job.kind, job.limits, inline)) for (const read of boundedSections(whole)) {
      textBytes += Buffer.byteLength(read.text, 'utf8');
      if (textBytes > job.limits.maxExtractedBytes) throw textLimitError(job.kind, job.limits.maxExtractedBytes);
      // Normalised once more, as the processor did on its side before (not quite idempotent:
      // a combining mark next to a removed invisible character composes on the second pass).
      const text = normalizeText(read.text);
      if (!text) continue;
      const section: ExtractedSection = { ...read, text };
      anyText = true;
      if (pieceBatcher && parts) {
        sizeBytes += Buffer.byteLength(text, 'utf8') + (sectionCount > 0 ? 2 : 0); // joined by blank lines
        sectionCount++;
        for (const piece of sectionPieces(section, parts.budget)) {
          const full = pieceBatcher.push(piece);
          if (full) send({ type: 'textPart', part: full });
        }
      } else {
        batch.push(section);
        batchChars += section.text.length;
        if (batchChars >= BATCH_CHARS) {
          send({ type: 'sections', sections: batch });
          batch = [];
          batchChars = 0;
        }
      }
      if (chunker) {
        tokenCount += countTokens(section.text);
        addChunks(chunker.push(section));
      }
    }
    if (!anyText) {
      throw new ExtractionError(
        'NO_TEXT',
        job.kind === 'pdf'
          ? 'the PDF has no extractable text (no text layer: a scanned document? OCR is not supported)'
          : 'the file contains no text',
      );
    }
    if (batch.length > 0) send({ type: 'sections', sections: batch });
    const lastPart = pieceBatcher?.flush();
    if (lastPart) send({ type: 'textPart', part: lastPart });
    if (chunker) {
      addChunks(chunker.flush());
      sendChunks();
      const lastChunks = chunkBatcher?.flush();
      if (lastChunks) send({ type: 'chunkBatch', chunks: lastChunks });
      send({ type: 'done', tokenCount, ...(parts ? { sizeBytes } : {}) });
    } else send({ type: 'done' });
  } catch (err) {
    if (err instanceof ExtractionError) send({ type: 'error', code: err.code, message: err.message });
    else send({ type: 'error', code: 'CORRUPT', message: `the ${job.kind} file could not be read (${describe(err)})` });
  }
}

/**
 * The warm-up of a spare worker: the sample below goes through the paths a first upload takes
 * (Markdown and plain text, normalising, chunking, token counting, cutting into events'
 * payloads) so that their code is compiled before a real document arrives. No file, no
 * tenant's data: the worker may still go to any workspace.
 */
const WARM_UP_SAMPLE = [
  '# Getting started',
  '',
  'The knowledge base keeps documents in workspaces. Each upload is extracted, normalised, cut into chunks and embedded, so that a search finds the passages closest to a question.',
  '',
  '## Install',
  '',
  '1. Download the package.',
  '2. Run `npm ci` and then `npm start`.',
  '',
  '```sh',
  'curl -s http://localhost:3000/healthz',
  '```',
  '',
  'Settings',
  '--------',
  '',
  '| Name | Meaning |',
  '|------|---------|',
  '| KB_DATA_DIR | Where the data lives. |',
  '',
  '> Quotes, lists and tables are text too: “curly quotes”, naïve accents, 数字 and emoji 🙂.',
].join('\n');

async function warmUp(job: ExtractJob, send: (msg: ExtractWorkerMessage) => void): Promise<void> {
  // Its messages are sent as well (their copying is part of a job), marked so the parent drops them.
  const mark = (msg: ExtractWorkerMessage): void => send({ type: 'warming', message: msg });
  const sample = Array.from({ length: 12 }, (_, i) => WARM_UP_SAMPLE.replace('Getting started', `Getting started, part ${i + 1}`)).join('\n\n');
  for (const kind of ['md', 'txt'] as const) await run({ ...job, filePath: '', kind }, mark, sample);
  // A job reads its file as a stream: this worker's own code file, read and decoded the same way
  // (and dropped), so that the first job does not pay for that path either (~5-10 ms here).
  for await (const piece of decodeFile(__filename)) if (piece.length === 0) break;
}

if (!isMainThread && parentPort) {
  // Background work: the event loop gets the cores first when both want them.
  lowerThisThreadPriority();
  const port = parentPort;
  const send = (msg: ExtractWorkerMessage): void => port.postMessage(msg);
  port.on('message', (msg: ExtractWorkerRequest) => {
    if (msg?.type === 'job') void run(msg.job, send);
    else if (msg?.type === 'warm') void warmUp(msg.job, send).then(
      () => send({ type: 'warmed' }),
      () => send({ type: 'warmed' }), // a warm-up that failed only leaves the first job slower
    );
  });
}
