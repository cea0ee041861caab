/**
 * Peak memory of extracting a .docx zip bomb (issue 11, finding 3). Not a test: it prints.
 *
 *   npm run build --silent && node --expose-gc dist/bench/extract-bomb.js [inflatedMiB] [lie]
 *
 * Builds (in a temp dir) a .docx whose word/document.xml inflates to `inflatedMiB` (default
 * 1024), extracts it with the default limits, and prints the file size, the outcome, the
 * RSS before, and the peak RSS during extraction (sampled every 10 ms, and the process's
 * maxRSS, which covers the worker thread: it shares the process). With `lie`, the ZIP headers
 * declare 2000 bytes for document.xml, so only the bounded inflate can stop it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { extractText } from '../src/processing/extract';
import { docxBomb } from '../test/support/zipBomb';

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

export async function benchExtractBomb(inflatedMiB = 1024, lie = false): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kb-bench-bomb-'));
  try {
    const file = path.join(dir, 'bomb.docx');
    const bomb = await docxBomb(inflatedMiB * 1024 * 1024, undefined, lie ? { declaredSize: 2000 } : {});
    await writeFile(file, bomb);
    (globalThis as { gc?: () => void }).gc?.();
    const idle = process.memoryUsage().rss;
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
    const started = performance.now();
    let outcome: string;
    try {
      const r = await extractText(file, 'docx', { timeoutMs: 300_000 });
      outcome = `extracted ${r.sections.length} sections`;
    } catch (err) {
      outcome = `${(err as { code?: string }).code ?? 'error'}: ${(err as Error).message}`;
    }
    clearInterval(sampler);
    const ms = performance.now() - started;
    peak = Math.max(peak, process.memoryUsage().rss);
    const maxRss = process.resourceUsage().maxRSS * 1024;
    console.log(`docx bomb: ${(bomb.length / 1024).toFixed(0)} KiB file, document.xml inflates to ${inflatedMiB} MiB${lie ? ' (headers declare 2000 bytes)' : ''}`);
    console.log(`outcome after ${ms.toFixed(0)} ms: ${outcome}`);
    console.log(`RSS idle ${mb(idle)}, peak sampled ${mb(peak)} (+${mb(peak - idle)}), process maxRSS ${mb(maxRss)}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  benchExtractBomb(Number(process.argv[2] ?? 1024), process.argv[3] === 'lie').catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
