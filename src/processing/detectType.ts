import { open } from 'node:fs/promises';
import path from 'node:path';
import { zipEntryNames } from './zipPackage';

export { zipEntryNames };

/**
 * File type detection for uploads: the type is judged from the content (magic bytes)
 * AND the file name, and both must agree (decisions.md, Documents).
 */

export type DocumentKind = 'pdf' | 'docx' | 'doc' | 'txt' | 'md';

export interface DetectedType {
  kind: DocumentKind;
  mimeType: string;
}

export const MIME_TYPES: Readonly<Record<DocumentKind, string>> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  doc: 'application/msword',
  txt: 'text/plain',
  md: 'text/markdown',
};

export const SUPPORTED_EXTENSIONS: readonly string[] = ['.pdf', '.docx', '.doc', '.txt', '.md'];

/** How many leading bytes detection needs (read them with `readHead`). */
export const DETECT_HEAD_BYTES = 8192;

export type InvalidFileTypeReason =
  | 'UNSUPPORTED_EXTENSION'
  | 'CONTENT_MISMATCH'
  | 'NOT_TEXT';

/** The upload is not one of the supported types; maps to 400 INVALID_FILE_TYPE. */
export class InvalidFileTypeError extends Error {
  readonly code = 'INVALID_FILE_TYPE' as const;
  constructor(
    readonly reason: InvalidFileTypeReason,
    message: string,
  ) {
    super(message);
    this.name = 'InvalidFileTypeError';
  }
}

export interface DetectInput {
  /** Original file name as uploaded (only its extension is used). */
  filename: string;
  /** The first bytes of the file (DETECT_HEAD_BYTES is enough; the whole file is fine too). */
  head: Uint8Array;
  /** Total file size in bytes; tells whether `head` is the whole file (default: assume it is not). */
  size?: number;
  /** The file on disk: needed to confirm a .docx from its ZIP central directory. */
  filePath?: string;
}

const PDF_MAGIC = Buffer.from('%PDF-', 'latin1');
const OLE2_MAGIC = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
const ZIP_LOCAL_MAGIC = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const DOCX_MAIN_PART = 'word/document.xml';

function startsWith(buf: Uint8Array, magic: Uint8Array, at = 0): boolean {
  if (buf.length < at + magic.length) return false;
  for (let i = 0; i < magic.length; i++) if (buf[at + i] !== magic[i]) return false;
  return true;
}

/** PDF readers accept the header anywhere in the first 1024 bytes. */
function isPdf(head: Uint8Array): boolean {
  return Buffer.from(head.buffer, head.byteOffset, Math.min(head.length, 1024)).indexOf(PDF_MAGIC) >= 0;
}

/** Which binary container the content is, if any (for clear mismatch messages). */
function sniffBinary(head: Uint8Array): string | undefined {
  if (startsWith(head, PDF_MAGIC)) return 'a PDF';
  if (startsWith(head, OLE2_MAGIC)) return 'an OLE2 (legacy Office) file';
  if (startsWith(head, ZIP_LOCAL_MAGIC)) return 'a ZIP archive';
  if (head.length >= 2 && head[0] === 0x4d && head[1] === 0x5a) return 'a Windows executable';
  if (startsWith(head, Buffer.from([0x7f, 0x45, 0x4c, 0x46]))) return 'an ELF executable';
  if (startsWith(head, Buffer.from('{\\rtf', 'latin1'))) return 'an RTF document';
  return undefined;
}

/**
 * Judges a file's type from its first bytes and its name. Rejects with InvalidFileTypeError
 * (a `.pdf` that is not a PDF, an executable renamed `.txt`, an unknown extension, ...).
 */
export async function detectType(input: DetectInput): Promise<DetectedType> {
  const { filename, head } = input;
  const ext = path.extname(filename).toLowerCase();
  const ok = (kind: DocumentKind): DetectedType => ({ kind, mimeType: MIME_TYPES[kind] });
  const mismatch = (expected: string): InvalidFileTypeError => {
    const actual = sniffBinary(head);
    return new InvalidFileTypeError(
      'CONTENT_MISMATCH',
      `"${filename}" is named ${ext} but its content is ${actual ?? `not ${expected}`}`,
    );
  };

  switch (ext) {
    case '.pdf':
      if (isPdf(head)) return ok('pdf');
      throw mismatch('a PDF');
    case '.doc':
      if (startsWith(head, OLE2_MAGIC)) return ok('doc');
      throw mismatch('a Word 97-2003 document (OLE2 compound file)');
    case '.docx': {
      if (!startsWith(head, ZIP_LOCAL_MAGIC)) throw mismatch('a Word document (ZIP package)');
      const names = input.filePath ? await zipEntryNames(input.filePath) : zipLocalNamesInHead(head);
      if (names?.includes(DOCX_MAIN_PART)) return ok('docx');
      throw new InvalidFileTypeError(
        'CONTENT_MISMATCH',
        names === undefined
          ? `"${filename}" is named .docx but its ZIP structure cannot be read`
          : `"${filename}" is a ZIP archive without ${DOCX_MAIN_PART}, not a Word document`,
      );
    }
    case '.txt':
    case '.md': {
      const problem = textProblem(head, input.size);
      if (problem === undefined) return ok(ext === '.txt' ? 'txt' : 'md');
      throw new InvalidFileTypeError('NOT_TEXT', `"${filename}" is named ${ext} but ${problem}`);
    }
    default:
      throw new InvalidFileTypeError(
        'UNSUPPORTED_EXTENSION',
        `"${filename}" has an unsupported type${ext ? ` (${ext})` : ' (no extension)'}; supported: ${SUPPORTED_EXTENSIONS.join(', ')}`,
      );
  }
}

/** Why `head` is not UTF-8 text, or undefined when it is. A BOM is fine. */
function textProblem(head: Uint8Array, size: number | undefined): string | undefined {
  const binary = sniffBinary(head);
  // Containers that are never text, even when their first bytes happen to be ASCII.
  if (startsWith(head, PDF_MAGIC) || startsWith(head, OLE2_MAGIC) || startsWith(head, ZIP_LOCAL_MAGIC)) {
    return `its content is ${binary}`;
  }
  if (head.length >= 2 && ((head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff))) {
    return 'it is UTF-16 encoded; only UTF-8 text is supported';
  }
  if (head.indexOf(0) >= 0) {
    return binary && !binary.startsWith('an RTF')
      ? `its content is ${binary}`
      : 'it contains NUL bytes (binary content, not text)';
  }
  const body = startsWith(head, UTF8_BOM) ? head.subarray(3) : head;
  const complete = size !== undefined && head.length >= size;
  try {
    // When `head` is only a prefix, a multi-byte character may be cut at its end: `stream` allows that.
    new TextDecoder('utf-8', { fatal: true }).decode(body, { stream: !complete });
  } catch {
    return 'it is not valid UTF-8 text';
  }
  return undefined;
}

/** Reads the first `bytes` bytes of a file. */
export async function readHead(filePath: string, bytes = DETECT_HEAD_BYTES): Promise<Buffer> {
  const fh = await open(filePath, 'r');
  try {
    const buf = Buffer.alloc(bytes);
    const { bytesRead } = await fh.read(buf, 0, bytes, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** Fallback without the file on disk: names of the local file headers found in `head`. */
function zipLocalNamesInHead(head: Uint8Array): string[] {
  const buf = Buffer.from(head.buffer, head.byteOffset, head.length);
  const names: string[] = [];
  let p = 0;
  while (p + 30 <= buf.length && buf.readUInt32LE(p) === 0x04034b50) {
    const flags = buf.readUInt16LE(p + 6);
    const compressed = buf.readUInt32LE(p + 18);
    const nameLen = buf.readUInt16LE(p + 26);
    const extraLen = buf.readUInt16LE(p + 28);
    if (p + 30 + nameLen > buf.length) break;
    names.push(buf.toString('utf8', p + 30, p + 30 + nameLen));
    if (flags & 0x08) break; // sizes follow the data: cannot walk further
    p += 30 + nameLen + extraLen + compressed;
  }
  return names;
}
