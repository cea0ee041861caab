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

/** EXTRACTION_LIMIT_EXCEEDED: the file passed one of the ExtractionLimits (its message names the setting). */
export type ExtractionErrorCode = 'NO_TEXT' | 'ENCRYPTED' | 'CORRUPT' | 'TIMEOUT' | 'EXTRACTION_LIMIT_EXCEEDED';

export class ExtractionError extends Error {
  constructor(
    readonly code: ExtractionErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ExtractionError';
  }
}

/**
 * Bounds on what one extraction may decompress, load and produce. The worker's heap limit
 * does not cover buffers outside the JS heap (inflated ZIP entries, file data), so these are
 * checked before the work, and again while it is done.
 */
export interface ExtractionLimits {
  /**
   * KB_MAX_EXTRACTED_BYTES: the UTF-8 bytes of extracted text (any type), and the bytes a
   * package may decompress to (.docx: the sum of the entries' uncompressed sizes, declared
   * and actual) or a legacy .doc may load.
   */
  maxExtractedBytes: number;
  /** KB_MAX_ZIP_ENTRIES: entries in a .docx package's central directory. */
  maxZipEntries: number;
  /** KB_MAX_PDF_PAGES: pages of a PDF. */
  maxPdfPages: number;
}

export const DEFAULT_EXTRACTION_LIMITS: Readonly<ExtractionLimits> = {
  maxExtractedBytes: 64 * 1024 * 1024,
  maxZipEntries: 5000,
  maxPdfPages: 5000,
};

export interface ExtractOptions {
  /** The worker is terminated and the call fails with TIMEOUT after this many milliseconds. */
  timeoutMs: number;
  /** Heap limit of the worker (default 512 MB); past it the call fails with CORRUPT. */
  maxHeapMb?: number;
  /** Default DEFAULT_EXTRACTION_LIMITS; past one, the call fails with EXTRACTION_LIMIT_EXCEEDED. */
  limits?: Partial<ExtractionLimits>;
  /** Aborting terminates the worker; the call rejects with the signal's reason. */
  signal?: AbortSignal;
}

export const DEFAULT_EXTRACT_TIMEOUT_MS = 120_000;
export const DEFAULT_EXTRACT_MAX_HEAP_MB = 512;

/** Data given to the worker. */
export interface ExtractJob {
  filePath: string;
  kind: DocumentKind;
  limits: ExtractionLimits;
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
 * normalised. Rejects with ExtractionError (NO_TEXT, ENCRYPTED, CORRUPT, TIMEOUT,
 * EXTRACTION_LIMIT_EXCEEDED); a missing file or unbuilt worker rejects with a plain Error.
 */
export async function extractText(filePath: string, kind: DocumentKind, opts: ExtractOptions): Promise<ExtractedText> {
  if (!KINDS.includes(kind)) throw new TypeError(`unsupported kind: ${String(kind)}`);
  if (!(opts.timeoutMs > 0)) throw new RangeError(`timeoutMs must be positive, got ${opts.timeoutMs}`);
  await stat(filePath); // ENOENT etc. are the caller's problem, not the file's
  if (!existsSync(EXTRACT_WORKER_PATH)) {
    throw new Error(`extraction worker not built (${EXTRACT_WORKER_PATH}); run \`npm run build\``);
  }
  const limits: ExtractionLimits = { ...DEFAULT_EXTRACTION_LIMITS, ...opts.limits };
  const job: ExtractJob = { filePath, kind, limits };
  const maxHeapMb = opts.maxHeapMb ?? DEFAULT_EXTRACT_MAX_HEAP_MB;
  const { signal } = opts;
  signal?.throwIfAborted();

  return new Promise<ExtractedText>((resolve, reject) => {
    const sections: ExtractedSection[] = [];
    let textBytes = 0;
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
      signal?.removeEventListener('abort', onAbort);
      void worker.terminate();
      if (err) reject(err);
      else resolve({ sections });
    };
    const timer = setTimeout(() => {
      finish(new ExtractionError('TIMEOUT', `extraction of the ${kind} file did not finish within ${opts.timeoutMs} ms and was stopped`));
    }, opts.timeoutMs);
    const onAbort = (): void => finish(signal?.reason instanceof Error ? signal.reason : new Error('extraction aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });

    worker.on('message', (msg: ExtractWorkerMessage) => {
      if (settled) return;
      if (msg.type === 'sections') {
        for (const s of msg.sections) {
          // The worker bounds its text too; this side does not trust it to.
          textBytes += Buffer.byteLength(s.text, 'utf8');
          if (textBytes > limits.maxExtractedBytes) {
            finish(textLimitError(kind, limits.maxExtractedBytes));
            return;
          }
          sections.push(s);
        }
      } else if (msg.type === 'done') finish(undefined);
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

/** The error for extracted text over KB_MAX_EXTRACTED_BYTES (worker and parent use the same words). */
export function textLimitError(kind: DocumentKind, maxBytes: number): ExtractionError {
  return new ExtractionError(
    'EXTRACTION_LIMIT_EXCEEDED',
    `the ${kind} file's extracted text is larger than ${maxBytes} bytes (KB_MAX_EXTRACTED_BYTES); split the document or raise the limit`,
  );
}
