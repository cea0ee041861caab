import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import { compiledPath } from '../util/paths';
import type { DocumentKind } from './detectType';

/**
 * Text extraction, run off the main event loop: each call starts a worker thread
 * (compiled JS at `compiledPath('src/processing/extractWorker')`) that extracts the file
 * and streams sections back; a time-out terminates the worker, and a crash or runaway
 * memory inside it (hostile or corrupt file) becomes a typed ExtractionError, never a
 * crash or hang of the server.
 */

export interface ExtractedSection {
  text: string;
  /** 1-based page number (PDF). */
  page?: number;
  /** Nearest heading path, e.g. "Install > Linux" (Markdown, .docx). */
  section?: string;
}

export interface ExtractedText {
  sections: ExtractedSection[];
}

export type ExtractionErrorCode = 'NO_TEXT' | 'ENCRYPTED' | 'CORRUPT' | 'TIMEOUT';

export class ExtractionError extends Error {
  constructor(
    readonly code: ExtractionErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ExtractionError';
  }
}

export interface ExtractOptions {
  /** The worker is terminated and the call fails with TIMEOUT after this many milliseconds. */
  timeoutMs: number;
  /** Heap limit of the worker (default 512 MB); past it the call fails with CORRUPT. */
  maxHeapMb?: number;
}

export const DEFAULT_EXTRACT_TIMEOUT_MS = 120_000;
export const DEFAULT_EXTRACT_MAX_HEAP_MB = 512;

/** Data given to the worker. */
export interface ExtractJob {
  filePath: string;
  kind: DocumentKind;
}

/** Messages from the worker. */
export type ExtractWorkerMessage =
  | { type: 'sections'; sections: ExtractedSection[] }
  | { type: 'done' }
  | { type: 'error'; code: ExtractionErrorCode; message: string };

export const EXTRACT_WORKER_PATH: string = compiledPath('src/processing/extractWorker');

const KINDS: readonly DocumentKind[] = ['pdf', 'docx', 'doc', 'txt', 'md'];

/**
 * Extracts the text of `filePath` as sections (one per PDF page; per heading for Markdown
 * and .docx; text files may arrive in several pieces of one section). Whitespace is
 * normalised. Rejects with ExtractionError (NO_TEXT, ENCRYPTED, CORRUPT, TIMEOUT); a missing
 * file or unbuilt worker rejects with a plain Error.
 */
export async function extractText(filePath: string, kind: DocumentKind, opts: ExtractOptions): Promise<ExtractedText> {
  if (!KINDS.includes(kind)) throw new TypeError(`unsupported kind: ${String(kind)}`);
  if (!(opts.timeoutMs > 0)) throw new RangeError(`timeoutMs must be positive, got ${opts.timeoutMs}`);
  await stat(filePath); // ENOENT etc. are the caller's problem, not the file's
  if (!existsSync(EXTRACT_WORKER_PATH)) {
    throw new Error(`extraction worker not built (${EXTRACT_WORKER_PATH}); run \`npm run build\``);
  }
  const job: ExtractJob = { filePath, kind };
  const maxHeapMb = opts.maxHeapMb ?? DEFAULT_EXTRACT_MAX_HEAP_MB;

  return new Promise<ExtractedText>((resolve, reject) => {
    const sections: ExtractedSection[] = [];
    let settled = false;
    const worker = new Worker(EXTRACT_WORKER_PATH, {
      workerData: job,
      resourceLimits: { maxOldGenerationSizeMb: maxHeapMb, maxYoungGenerationSizeMb: 64 },
      stdout: true, // keep library chatter (pdf.js warnings) out of the server's output
      stderr: true,
    });
    worker.stdout.resume();
    worker.stderr.resume();

    const finish = (err: Error | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      if (err) reject(err);
      else resolve({ sections });
    };
    const timer = setTimeout(() => {
      finish(new ExtractionError('TIMEOUT', `extraction of the ${kind} file did not finish within ${opts.timeoutMs} ms and was stopped`));
    }, opts.timeoutMs);

    worker.on('message', (msg: ExtractWorkerMessage) => {
      if (settled) return;
      if (msg.type === 'sections') for (const s of msg.sections) sections.push(s);
      else if (msg.type === 'done') finish(undefined);
      else finish(new ExtractionError(msg.code, msg.message));
    });
    worker.on('error', (err: Error & { code?: string }) => {
      finish(
        new ExtractionError(
          'CORRUPT',
          err.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? `the ${kind} file needed more than ${maxHeapMb} MB of memory to extract and was rejected`
            : `the ${kind} file could not be read: ${err.message}`,
        ),
      );
    });
    worker.on('exit', (code) => {
      finish(new ExtractionError('CORRUPT', `extraction of the ${kind} file stopped unexpectedly (exit code ${code})`));
    });
  });
}
