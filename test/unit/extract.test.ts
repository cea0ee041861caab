import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DocumentKind } from '../../src/processing/detectType';
import { closeIdleExtractionWorkers, ExtractedText, ExtractionError, ExtractionErrorCode, extractText, idleExtractionWorkers, keepSpareExtractionWorker, spareExtractionWorkerWarm } from '../../src/processing/extract';
import { chunkText, countTokens } from '../../src/processing/chunker';
import { chunkBatches, textExtractedParts } from '../../src/domain/document/eventParts';
import { normalizeText } from '../../src/processing/normalize';
import { documentBody, docx } from '../support/zipBomb';

// extractText runs the compiled worker from dist/ (jest's globalSetup, or `npm run build`).

const fixture = (name: string): string => path.join(__dirname, '..', 'fixtures', name);
const opts = { timeoutMs: 30_000 };

async function failure(p: Promise<ExtractedText>): Promise<ExtractionError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ExtractionError);
    return err as ExtractionError;
  }
  throw new Error('expected extraction to fail');
}

describe('normalizeText', () => {
  it('normalises line ends, spaces, blank lines and invisible characters', () => {
    expect(normalizeText('\ufeff  a\u00a0\u00a0b\t\tc  \r\nd\re\n\n\n\n f\u200b\u00adg \n')).toBe('a b c\nd\ne\n\nf' + 'g');
    expect(normalizeText('x\u0000y\u0007z')).toBe('x y z');
    expect(normalizeText('e\u0301')).toBe('é'); // NFC
    expect(normalizeText(' \n\t ')).toBe('');
  });
});

describe('extractText', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'kb-extract-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('PDF: one section per page, with page numbers and the page text', async () => {
    const { sections } = await extractText(fixture('sample.pdf'), 'pdf', opts);
    expect(sections).toEqual([
      { page: 1, text: 'Alpha page. The aardvark eats ants at dawn.\nApples grow on the first page.' },
      { page: 2, text: 'Beta page. Bears fish for salmon in the river.\nBananas belong to the second page.' },
      { page: 3, text: 'Gamma page. Giraffes reach the tallest leaves.\nGrapes close the third page.' },
    ]);
  });

  it('.docx: text under each heading carries the heading path', async () => {
    const { sections } = await extractText(fixture('sample.docx'), 'docx', opts);
    expect(sections).toEqual([
      { text: 'Preface paragraph before headings.' },
      { text: 'Install the service first. Bold words & more.', section: 'Installation' },
      { text: 'Use the package manager on Linux.', section: 'Installation > Linux' },
      { text: 'Use the installer on Windows.', section: 'Installation > Windows' },
      { text: 'Start the service and search.', section: 'Usage' },
    ]);
  });

  it('.doc (written by LibreOffice): the body text, paragraphs in order', async () => {
    const { sections } = await extractText(fixture('sample.doc'), 'doc', opts);
    expect(sections).toEqual([
      {
        text: [
          'Preface paragraph before headings.',
          'Installation',
          'Install the service first. Bold words & more.',
          'Linux',
          'Use the package manager on Linux.',
          'Windows',
          'Use the installer on Windows.',
          'Usage',
          'Start the service and search.',
        ].join('\n'),
      },
    ]);
  });

  it('.md: sections know their nearest heading path; code is not a heading', async () => {
    const { sections } = await extractText(fixture('sample.md'), 'md', opts);
    expect(sections).toEqual([
      { text: 'Intro text before any heading.' },
      { text: '# Install\n\nGeneral installation notes.', section: 'Install' },
      {
        text: '## Linux\n\nRun the package manager on Linux.\n\n```sh\n# this is a shell comment, not a heading\napt-get install kb\n```',
        section: 'Install > Linux',
      },
      { text: '### Debian\n\nDebian needs the contrib repository.', section: 'Install > Linux > Debian' },
      { text: '## Windows\n\nUse the installer on Windows.', section: 'Install > Windows' },
      { text: 'Usage\n=====\n\nStart the service with npm start.', section: 'Usage' }, // setext heading, level 1
    ]);
  });

  it('.txt: UTF-8 text, whitespace normalised', async () => {
    const { sections } = await extractText(fixture('sample.txt'), 'txt', opts);
    expect(sections).toEqual([
      {
        text:
          'The quick brown fox jumps over the lazy dog. Extra spaces collapse.\n\n' +
          'Second paragraph: café, naïve, 東京 and an emoji 🙂.\nA CRLF line ended above.\n\n' +
          'Third paragraph after many blank lines.',
      },
    ]);
  });

  it('.txt with a BOM and a multi-megabyte body arrives in pieces that add up to the text', async () => {
    const para = (i: number) => `Paragraph ${i} has a few words in it, é 東 🙂.`;
    const body = Array.from({ length: 60_000 }, (_, i) => para(i)).join('\n\n');
    const p = path.join(dir, 'big.txt');
    await writeFile(p, '\ufeff' + body);
    const { sections } = await extractText(p, 'txt', opts);
    expect(sections.length).toBeGreaterThan(5);
    expect(sections.every((s) => s.page === undefined && s.section === undefined)).toBe(true);
    expect(sections.map((s) => s.text).join('\n\n')).toBe(body);
  });

  it('.md: long sections are handed on in pieces that keep their heading', async () => {
    const body = Array.from({ length: 30_000 }, (_, i) => `Line ${i} of the long section.`).join('\n\n');
    const p = path.join(dir, 'big.md');
    await writeFile(p, `# Big\n\n## Part\n\n${body}\n\n# After\n\nEnd.\n`);
    const { sections } = await extractText(p, 'md', opts);
    const part = sections.filter((s) => s.section === 'Big > Part');
    expect(part.length).toBeGreaterThan(1);
    expect(part.map((s) => s.text).join('\n\n')).toBe(`## Part\n\n${body}`);
    expect(sections[sections.length - 1]).toEqual({ text: '# After\n\nEnd.', section: 'After' });
  });

  const failures: [string, DocumentKind, ExtractionErrorCode, RegExp][] = [
    ['truncated.pdf', 'pdf', 'CORRUPT', /PDF could not be read/],
    ['random.pdf', 'pdf', 'CORRUPT', /PDF could not be read/],
    ['encrypted.pdf', 'pdf', 'ENCRYPTED', /password-protected/],
    ['scanned.pdf', 'pdf', 'NO_TEXT', /no extractable text.*scanned/],
    ['empty.txt', 'txt', 'NO_TEXT', /contains no text/],
    ['blank.md', 'md', 'NO_TEXT', /contains no text/],
    ['not-word.docx', 'docx', 'CORRUPT', /Word document could not be read/],
    ['sample.doc', 'docx', 'CORRUPT', /Word document could not be read/],
    ['random.pdf', 'doc', 'CORRUPT', /Word 97-2003 document could not be read/],
  ];
  it.each(failures)('%s as %s fails with %s', async (name, kind, code, message) => {
    const err = await failure(extractText(fixture(name), kind, opts));
    expect(err.code).toBe(code);
    expect(err.message).toMatch(message);
  });

  it('a worker that does not finish in time is stopped with TIMEOUT, and the next extraction works', async () => {
    // 1 ms cannot fit even starting a worker thread and loading pdf.js.
    const err = await failure(extractText(fixture('sample.pdf'), 'pdf', { timeoutMs: 1 }));
    expect(err.code).toBe('TIMEOUT');
    expect(err.message).toMatch(/did not finish within 1 ms/);
    await expect(extractText(fixture('sample.pdf'), 'pdf', opts)).resolves.toMatchObject({ sections: [{ page: 1 }, { page: 2 }, { page: 3 }] });
  });

  it('a worker that runs out of memory fails with CORRUPT, not a crash', async () => {
    // Text files are streamed (a huge line too), so their memory no longer depends on their
    // size. A .docx is not: mammoth holds the whole document.xml and its tree. 200,000
    // paragraphs (~12 MB of XML, some 800,000 tree nodes) cannot fit a 16 MB heap.
    const p = path.join(dir, 'many-paragraphs.docx');
    const paragraphs = '<w:p><w:r><w:t>A paragraph of words.</w:t></w:r></w:p>'.repeat(200_000);
    await writeFile(p, docx(documentBody(paragraphs)));
    const err = await failure(extractText(p, 'docx', { timeoutMs: 60_000, maxHeapMb: 16 }));
    expect(err.code).toBe('CORRUPT');
    expect(err.message).toMatch(/the docx file needed more than 16 MB of memory/);
  });

  it('a missing file is not an extraction error', async () => {
    await expect(extractText(path.join(dir, 'nope.pdf'), 'pdf', opts)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('chunks the text in the worker as the chunker does on the sections, and counts its tokens', async () => {
    const chunking = { chunkTokens: 40, overlapTokens: 8 };
    for (const [name, kind] of [['sample.md', 'md'], ['sample.pdf', 'pdf'], ['sample.docx', 'docx']] as const) {
      const r = await extractText(fixture(name), kind, { ...opts, chunking });
      expect(r.chunks?.length).toBeGreaterThan(1);
      expect(r.chunks).toEqual(chunkText(r.sections, chunking));
      expect(r.tokenCount).toBe(r.sections.reduce((n, s) => n + countTokens(s.text), 0));
    }
    // Without `chunking`, sections only.
    expect(await extractText(fixture('sample.md'), 'md', opts)).not.toHaveProperty('chunks');
  });

  it('reuses a worker only for the same isolation key, and only after a job that ended well', async () => {
    await closeIdleExtractionWorkers();
    const a = await extractText(fixture('sample.pdf'), 'pdf', { ...opts, isolationKey: 'ws-a' });
    expect(idleExtractionWorkers()).toEqual([{ key: 'ws-a', jobs: 1 }]);
    // The same worker serves the next job of that key, with the same result.
    expect(await extractText(fixture('sample.pdf'), 'pdf', { ...opts, isolationKey: 'ws-a' })).toEqual(a);
    expect(idleExtractionWorkers()).toEqual([{ key: 'ws-a', jobs: 2 }]);
    // Another key never gets it.
    await extractText(fixture('sample.md'), 'md', { ...opts, isolationKey: 'ws-b' });
    expect(idleExtractionWorkers()).toEqual([
      { key: 'ws-a', jobs: 2 },
      { key: 'ws-b', jobs: 1 },
    ]);
    // A job that fails ends its worker; the next job of that key starts a fresh one.
    const corrupt = path.join(dir, 'corrupt.pdf');
    await writeFile(corrupt, '%PDF-1.4 not really a pdf');
    await failure(extractText(corrupt, 'pdf', { ...opts, isolationKey: 'ws-a' }));
    expect(idleExtractionWorkers()).toEqual([{ key: 'ws-b', jobs: 1 }]);
    await extractText(fixture('sample.md'), 'md', { ...opts, isolationKey: 'ws-a' });
    expect(idleExtractionWorkers()).toEqual([
      { key: 'ws-b', jobs: 1 },
      { key: 'ws-a', jobs: 1 },
    ]);
    // Without a key, no worker is kept.
    await extractText(fixture('sample.md'), 'md', opts);
    expect(idleExtractionWorkers()).toHaveLength(2);
    await closeIdleExtractionWorkers();
    expect(idleExtractionWorkers()).toEqual([]);
  });

  it('a reused worker is still stopped by the time-out', async () => {
    await extractText(fixture('sample.md'), 'md', { ...opts, isolationKey: 'ws-t' });
    expect(idleExtractionWorkers()).toEqual([{ key: 'ws-t', jobs: 1 }]);
    const err = await failure(extractText(fixture('sample.pdf'), 'pdf', { timeoutMs: 1, isolationKey: 'ws-t' }));
    expect(err.code).toBe('TIMEOUT');
    expect(idleExtractionWorkers()).toEqual([]);
    await expect(extractText(fixture('sample.pdf'), 'pdf', { ...opts, isolationKey: 'ws-t' })).resolves.toMatchObject({ sections: [{ page: 1 }, { page: 2 }, { page: 3 }] });
    await closeIdleExtractionWorkers();
  });

  it('a spare worker (no job run yet) goes to any workspace and is replaced; none once closed', async () => {
    keepSpareExtractionWorker();
    expect(idleExtractionWorkers()).toEqual([{ key: undefined, jobs: 0 }]);
    const r = await extractText(fixture('sample.md'), 'md', { ...opts, isolationKey: 'ws-s' });
    expect(r.sections.length).toBeGreaterThan(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(idleExtractionWorkers()).toEqual([
      { key: 'ws-s', jobs: 1 },
      { key: undefined, jobs: 0 },
    ]);
    await closeIdleExtractionWorkers();
    await extractText(fixture('sample.md'), 'md', { ...opts, isolationKey: 'ws-s' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(idleExtractionWorkers()).toEqual([{ key: 'ws-s', jobs: 1 }]);
    await closeIdleExtractionWorkers();
  });

  it('a warmed-up spare (a built-in sample run through the jobs\' options) still goes to any workspace and answers exactly as a cold worker', async () => {
    const chunking = { chunkTokens: 60, overlapTokens: 10 };
    const eventParts = { budget: 4096, maxChunks: 8 };
    const job = { ...opts, chunking, eventParts };
    const cold = await extractText(fixture('sample.md'), 'md', job); // no key: a worker of its own
    await keepSpareExtractionWorker({ warmUp: { chunking, eventParts } });
    expect(idleExtractionWorkers()).toEqual([{ key: undefined, jobs: 0 }]);
    const warm = await extractText(fixture('sample.md'), 'md', { ...job, isolationKey: 'ws-w' });
    expect(warm).toEqual(cold);
    await new Promise((resolve) => setImmediate(resolve));
    expect(idleExtractionWorkers()).toEqual([
      { key: 'ws-w', jobs: 1 },
      { key: undefined, jobs: 0 },
    ]);
    // A job given to a spare still warming up gets its own answer only.
    await closeIdleExtractionWorkers();
    const warming = keepSpareExtractionWorker({ warmUp: { chunking, eventParts } });
    const during = await extractText(fixture('sample.md'), 'md', { ...job, isolationKey: 'ws-x' });
    await warming;
    expect(during).toEqual(cold);
    await closeIdleExtractionWorkers();
  });

  it('closing the workers of some keys (the start-up rehearsal\'s) leaves the spare and the other keys\' workers; the replacement spare is awaited warm', async () => {
    const warmUp = { chunking: { chunkTokens: 60, overlapTokens: 10 }, eventParts: { budget: 4096, maxChunks: 8 } };
    await keepSpareExtractionWorker({ warmUp });
    await extractText(fixture('sample.md'), 'md', { ...opts, isolationKey: 'ws-other' });
    await extractText(fixture('sample.md'), 'md', { ...opts, isolationKey: 'ws-rehearsal' });
    await new Promise((resolve) => setImmediate(resolve));
    await spareExtractionWorkerWarm();
    expect(idleExtractionWorkers()).toEqual([
      { key: 'ws-other', jobs: 1 },
      { key: 'ws-rehearsal', jobs: 1 },
      { key: undefined, jobs: 0 },
    ]);
    await closeIdleExtractionWorkers(new Set(['ws-rehearsal']));
    expect(idleExtractionWorkers()).toEqual([
      { key: 'ws-other', jobs: 1 },
      { key: undefined, jobs: 0 },
    ]);
    // The spare is still kept: taken again, it is replaced again.
    await extractText(fixture('sample.md'), 'md', { ...opts, isolationKey: 'ws-third' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(idleExtractionWorkers()).toContainEqual({ key: undefined, jobs: 0 });
    await closeIdleExtractionWorkers();
    expect(idleExtractionWorkers()).toEqual([]);
  });

  it('with eventParts, the worker hands over the text and chunks as the payloads of the events the processor made of them before', async () => {
    const chunking = { chunkTokens: 60, overlapTokens: 10 };
    const long = path.join(dir, 'long.txt');
    // Several pieces per section (a long paragraph), several parts and chunk batches.
    await writeFile(long, Array.from({ length: 3000 }, (_, i) => `Sentence ${i} about l\u00e9gumes and wings.`).join(' ') + '\n\n' + 'Short tail.\n');
    const cases = [
      [fixture('sample.md'), 'md', 2048, 3],
      [fixture('sample.pdf'), 'pdf', 4096, 5],
      [fixture('sample.docx'), 'docx', 1024, 2],
      [long, 'txt', 16 * 1024, 40],
    ] as const;
    for (const [file, kind, budget, maxChunks] of cases) {
      const plain = await extractText(file, kind, { ...opts, chunking });
      const ready = await extractText(file, kind, { ...opts, chunking, eventParts: { budget, maxChunks } });
      expect(ready.sections).toEqual([]);
      expect(ready.textParts).toEqual(textExtractedParts(plain.sections, budget));
      expect(ready.chunkBatches).toEqual(chunkBatches(plain.chunks ?? [], maxChunks, budget));
      expect(ready.tokenCount).toBe(plain.tokenCount);
      expect(ready.sizeBytes).toBe(Buffer.byteLength(plain.sections.map((s) => s.text).join('\n\n'), 'utf8'));
      if (kind === 'txt') {
        expect(ready.textParts?.length).toBeGreaterThan(2);
        expect(ready.textParts?.flat().some((p) => p.continued)).toBe(true);
        expect(ready.chunkBatches?.length).toBeGreaterThan(2);
      }
    }
  });
});
