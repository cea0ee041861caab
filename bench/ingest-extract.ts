/**
 * Memory and speed check of document processing (not a test: it prints, it does not assert).
 *
 *   npm run build --silent && node dist/bench/ingest-extract.js [pdfPages] [textMb]
 *
 * Generates a PDF (default 100 pages) and a text file (default 20 MB) in a temp dir, then
 * prints extraction time of each, chunking throughput, and the peak RSS of the process
 * (`maxRSS` covers the extraction worker threads too: they share the process).
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { chunkTextStream, DEFAULT_CHUNK_OPTIONS } from '../src/processing/chunker';
import { extractText } from '../src/processing/extract';

const WORDS = (
  'the service keeps documents in workspaces and splits extracted text into chunks that are embedded ' +
  'as vectors so that semantic search returns the most similar passages with a relevance score ' +
  'retrieval augmented generation needs stable chunk boundaries page numbers and section headings'
).split(' ');

function sentence(seed: number): string {
  const n = 8 + (seed % 17);
  const words: string[] = [];
  for (let i = 0; i < n; i++) words.push(WORDS[(seed * 31 + i * 7) % WORDS.length]);
  const s = words.join(' ');
  return `${s[0].toUpperCase()}${s.slice(1)}.`;
}

async function makePdf(file: string, pages: number): Promise<void> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  let seed = 1;
  for (let p = 0; p < pages; p++) {
    const page = doc.addPage([595, 842]);
    for (let line = 0; line < 45; line++) {
      page.drawText(`${p + 1}.${line + 1} ${sentence(seed++)}`.slice(0, 95), { x: 40, y: 800 - line * 17, size: 10, font });
    }
  }
  await writeFile(file, await doc.save());
}

async function makeText(file: string, bytes: number): Promise<void> {
  const out = createWriteStream(file);
  let written = 0;
  let seed = 1;
  while (written < bytes) {
    const para = Array.from({ length: 5 }, () => sentence(seed++)).join(' ') + '\n\n';
    written += Buffer.byteLength(para);
    if (!out.write(para)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

export async function benchExtract(pdfPages = 100, textMb = 20): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kb-bench-extract-'));
  try {
    const pdf = path.join(dir, `bench-${pdfPages}p.pdf`);
    const txt = path.join(dir, `bench-${textMb}mb.txt`);
    await makePdf(pdf, pdfPages);
    await makeText(txt, textMb * 1024 * 1024);
    const baseline = process.memoryUsage().rss;
    console.log(`files: ${pdfPages}-page PDF ${mb((await stat(pdf)).size)}, text ${mb((await stat(txt)).size)}; RSS before extraction ${mb(baseline)}`);

    let t = performance.now();
    const pdfText = await extractText(pdf, 'pdf', { timeoutMs: 300_000 });
    const pdfMs = performance.now() - t;
    console.log(`extract PDF: ${pdfPages} pages in ${pdfMs.toFixed(0)} ms (${(pdfMs / pdfPages).toFixed(1)} ms/page), ${pdfText.sections.length} page sections`);

    t = performance.now();
    const txtText = await extractText(txt, 'txt', { timeoutMs: 300_000 });
    const txtMs = performance.now() - t;
    const chars = txtText.sections.reduce((n, s) => n + s.text.length, 0);
    console.log(`extract text: ${mb(chars)} of characters in ${txtText.sections.length} pieces in ${txtMs.toFixed(0)} ms`);

    for (const [name, sections] of [
      ['PDF', pdfText.sections],
      ['text', txtText.sections],
    ] as const) {
      t = performance.now();
      let chunks = 0;
      let tokens = 0;
      for (const c of chunkTextStream(sections, DEFAULT_CHUNK_OPTIONS)) {
        chunks++;
        tokens += c.tokenCount;
      }
      const s = (performance.now() - t) / 1000;
      const inChars = sections.reduce((n, x) => n + x.text.length, 0);
      console.log(
        `chunk ${name}: ${chunks} chunks (${DEFAULT_CHUNK_OPTIONS.chunkTokens}/${DEFAULT_CHUNK_OPTIONS.overlapTokens} tokens), ` +
          `${tokens} tokens in ${(s * 1000).toFixed(0)} ms = ${(inChars / 1024 / 1024 / s).toFixed(1)} MB/s, ${(chunks / s).toFixed(0)} chunks/s`,
      );
    }
    const peak = process.resourceUsage().maxRSS * 1024;
    console.log(`peak RSS ${mb(peak)} (growth over the pre-extraction RSS: ${mb(peak - baseline)})`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const [pages, textMb] = process.argv.slice(2).map(Number);
  benchExtract(pages || undefined, textMb || undefined).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
