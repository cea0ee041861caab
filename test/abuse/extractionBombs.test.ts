import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { ExtractedText, ExtractionError, extractText } from '../../src/processing/extract';
import { startServer, signUp, client, TestServer } from '../support/server';
import { docx, docxBomb, documentXml, entry, paddedEntry } from '../support/zipBomb';

// Issue 11, finding 3: a .docx whose document.xml inflates to a gigabyte took 2.4 GB of
// memory. Decompressed bytes, ZIP entries, PDF pages and extracted text are now bounded,
// and a document over a bound ends FAILED with EXTRACTION_LIMIT_EXCEEDED.

const MiB = 1024 * 1024;

async function failure(p: Promise<ExtractedText>): Promise<ExtractionError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ExtractionError);
    return err as ExtractionError;
  }
  throw new Error('expected extraction to fail');
}

async function pdfOfPages(pages: number, linesPerPage = 3): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let p = 1; p <= pages; p++) {
    const page = doc.addPage([595, 842]);
    for (let l = 0; l < linesPerPage; l++) page.drawText(`Page ${p} line ${l} of a long and tedious report.`, { x: 40, y: 800 - l * 14, size: 10, font });
  }
  return Buffer.from(await doc.save());
}

describe('extraction limits (extractText)', () => {
  let dir: string;
  const file = async (name: string, data: Buffer | string): Promise<string> => {
    const p = path.join(dir, name);
    await writeFile(p, data);
    return p;
  };
  const limits = { maxExtractedBytes: 4 * MiB, maxZipEntries: 100, maxPdfPages: 10 };
  const opts = { timeoutMs: 30_000, limits };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'kb-bombs-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a .docx whose document.xml inflates past the bound is refused from its central directory', async () => {
    const bomb = await docxBomb(64 * MiB);
    expect(bomb.length).toBeLessThan(MiB); // a small file ...
    const err = await failure(extractText(await file('bomb.docx', bomb), 'docx', opts));
    expect(err.code).toBe('EXTRACTION_LIMIT_EXCEEDED');
    expect(err.message).toMatch(/KB_MAX_EXTRACTED_BYTES/);
  });

  it('a .docx that lies about its sizes is stopped while inflating, not after', async () => {
    const honest = await paddedEntry('word/document.xml', '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><!--', ' ', 32 * MiB, '--></w:body></w:document>');
    const lying = { ...honest, size: 2000 }; // the headers claim 2 kB
    const err = await failure(extractText(await file('liar.docx', docx(lying)), 'docx', opts));
    expect(err.code).toBe('EXTRACTION_LIMIT_EXCEEDED');
  });

  it('a .docx with too many entries is refused', async () => {
    const extra = Array.from({ length: 300 }, (_, i) => entry(`customXml/item${i}.xml`, '<a/>'));
    const err = await failure(extractText(await file('many.docx', docx(documentXml('Hello entries.'), extra)), 'docx', opts));
    expect(err.code).toBe('EXTRACTION_LIMIT_EXCEEDED');
    expect(err.message).toMatch(/KB_MAX_ZIP_ENTRIES/);
  });

  it('a .docx within the bounds still extracts', async () => {
    const { sections } = await extractText(await file('ok.docx', docx(documentXml('Hello bounded world.'))), 'docx', opts);
    expect(sections).toEqual([{ text: 'Hello bounded world.' }]);
    const padded = await docxBomb(MiB, 'Padded but fine.'); // 1 MiB of padding, under 4 MiB
    expect((await extractText(await file('padded.docx', padded), 'docx', opts)).sections).toEqual([{ text: 'Padded but fine.' }]);
  });

  it('a PDF with more pages than the bound is refused', async () => {
    const err = await failure(extractText(await file('pages.pdf', await pdfOfPages(25)), 'pdf', opts));
    expect(err.code).toBe('EXTRACTION_LIMIT_EXCEEDED');
    expect(err.message).toMatch(/KB_MAX_PDF_PAGES/);
    expect((await extractText(await file('ten.pdf', await pdfOfPages(10)), 'pdf', opts)).sections).toHaveLength(10);
  });

  it('extracted text of any type is bounded by KB_MAX_EXTRACTED_BYTES', async () => {
    const small = { ...opts, limits: { ...limits, maxExtractedBytes: 2000 } };
    const pdf = await failure(extractText(await file('wordy.pdf', await pdfOfPages(8, 20)), 'pdf', small));
    expect(pdf.code).toBe('EXTRACTION_LIMIT_EXCEEDED');
    const long = 'A sentence of plain text that goes on.\n'.repeat(200);
    for (const kind of ['txt', 'md'] as const) {
      const err = await failure(extractText(await file(`long.${kind}`, long), kind, small));
      expect(err.code).toBe('EXTRACTION_LIMIT_EXCEEDED');
    }
    const docxErr = await failure(extractText(await file('wordy.docx', docx(documentXml('word '.repeat(1000)))), 'docx', small));
    expect(docxErr.code).toBe('EXTRACTION_LIMIT_EXCEEDED');
  });

  it('a Markdown file of tiny sections is refused at KB_MAX_CHUNKS_PER_DOCUMENT (default 200,000), counted as the chunks are made', async () => {
    // 2 MB of alternating one-word sections: one chunk each, 349,526 of them unbounded.
    const err = await failure(extractText(await file('headings.md', tinySections(2 * MiB)), 'md', { ...opts, chunking: { chunkTokens: 200, overlapTokens: 40 } }));
    expect(err.code).toBe('EXTRACTION_LIMIT_EXCEEDED');
    expect(err.message).toMatch(/more than 200000 chunks \(KB_MAX_CHUNKS_PER_DOCUMENT\)/);
  });

  it('the chunk bound counts chunks, not sections or bytes: a document of exactly the bound passes, one more chunk fails', async () => {
    const prose = Array.from({ length: 300 }, (_, i) => `Paragraph ${i} of an ordinary report on wing loading, with a sentence or two. It goes on for a while about flutter and drag.`).join('\n\n');
    const chunking = { chunkTokens: 200, overlapTokens: 40 };
    const p = await file('prose.md', prose);
    const whole = await extractText(p, 'md', { ...opts, chunking });
    const n = whole.chunks?.length ?? 0;
    expect(n).toBeGreaterThan(10);
    expect((await extractText(p, 'md', { ...opts, chunking, limits: { ...limits, maxChunks: n } })).chunks).toHaveLength(n);
    const err = await failure(extractText(p, 'md', { ...opts, chunking, limits: { ...limits, maxChunks: n - 1 } }));
    expect(err.message).toMatch(/KB_MAX_CHUNKS_PER_DOCUMENT/);
  });
});

/** Markdown of alternating one-word sections (`# a`, `# b`: a new section each time), `bytes` long. */
function tinySections(bytes: number, word = 'x'): string {
  const pair = `# a\n${word}\n# b\n${word}\n`;
  return pair.repeat(Math.ceil(bytes / pair.length));
}

describe('extraction limits (HTTP)', () => {
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let ws: string;

  beforeAll(async () => {
    server = await startServer({
      KB_RATE_LIMITS: 'off',
      KB_LOG_LEVEL: 'warn',
      KB_MAX_EXTRACTED_BYTES: String(4 * MiB),
      KB_MAX_PDF_PAGES: '10',
      KB_MAX_ZIP_ENTRIES: '100',
    });
    api = (await signUp(server.url, 'Bomber')).api;
    ws = (await api.post('/v1/workspaces', { name: 'Bombs' })).body.id;
  });
  afterAll(async () => {
    await server?.stop();
  });

  async function uploadSettled(bytes: Buffer, name: string) {
    const fd = new FormData();
    fd.append('file', new Blob([new Uint8Array(bytes)]), name);
    const r = await api.post(`/v1/workspaces/${ws}/documents`, fd);
    expect(r.status).toBe(201);
    for (let i = 0; i < 300; i++) {
      const d = await api.get(`/v1/workspaces/${ws}/documents/${r.body.id}`);
      if (d.body.processingStatus === 'VERIFIED' || d.body.processingStatus === 'FAILED') return d.body;
      await new Promise((res) => setTimeout(res, 200));
    }
    throw new Error(`${name} never settled`);
  }

  it('a .docx zip bomb ends FAILED with EXTRACTION_LIMIT_EXCEEDED; the server stays up', async () => {
    const doc = await uploadSettled(await docxBomb(256 * MiB), 'bomb.docx');
    expect(doc.processingStatus).toBe('FAILED');
    expect(doc.error).toMatchObject({ code: 'EXTRACTION_LIMIT_EXCEEDED' });
    expect(doc.error.message).toMatch(/KB_MAX_EXTRACTED_BYTES/);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it('a PDF with too many pages ends FAILED with EXTRACTION_LIMIT_EXCEEDED', async () => {
    const doc = await uploadSettled(await pdfOfPages(30), 'pages.pdf');
    expect(doc.processingStatus).toBe('FAILED');
    expect(doc.error).toMatchObject({ code: 'EXTRACTION_LIMIT_EXCEEDED' });
  });

  it('a Markdown file of tiny sections ends FAILED past the chunk bound, and none of it is searchable', async () => {
    // 3 MB: 349,526 sections of the word 'zeph'.
    const doc = await uploadSettled(Buffer.from(tinySections(3 * MiB, 'zeph')), 'headings.md');
    expect(doc.processingStatus).toBe('FAILED');
    expect(doc.error).toMatchObject({ code: 'EXTRACTION_LIMIT_EXCEEDED' });
    expect(doc.error.message).toMatch(/KB_MAX_CHUNKS_PER_DOCUMENT/);
    expect(doc.chunkCount ?? 0).toBe(0);
    // The word is found where it is indexed (an ordinary document holding it), never in the refused one.
    const ordinary = await uploadSettled(Buffer.from('# Notes\n\nThe zeph is a small wind that blows in the spring.\n'), 'ordinary.md');
    expect(ordinary.processingStatus).toBe('VERIFIED');
    const found = await api.post(`/v1/workspaces/${ws}/search`, { query: 'zeph', limit: 20 });
    expect(found.status).toBe(200);
    expect(found.body.results.map((r: { documentId: string }) => r.documentId)).toEqual([ordinary.id]);
  });

  it('a normal .docx is still VERIFIED', async () => {
    const doc = await uploadSettled(docx(documentXml('An ordinary document about limits.')), 'ok.docx');
    expect(doc.processingStatus).toBe('VERIFIED');
  });
});
