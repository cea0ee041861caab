import busboy from 'busboy';
import path from 'node:path';
import { Readable, Transform, TransformCallback } from 'node:stream';
import { Request } from 'express';
import { BlobStore, BlobTooLargeError, StoredBlob } from '../ports/blobStore';
import { DomainError } from '../domain/errors';
import { StoredUpload } from '../../commands/document/uploadDocument';
import { decode, HumanName, Purpose } from './codecs';
import { codePointLength, textProblem } from '../util/text';
import { DETECT_HEAD_BYTES, DetectedType, detectType, InvalidFileTypeError, SUPPORTED_EXTENSIONS } from '../processing/detectType';

export interface ReceivedUpload {
  blob: StoredBlob;
  type: DetectedType;
  filename: string;
  fields: { title?: string; purpose?: string; tags: string[] };
}

/** The longest file name taken, in code points (a title's bound; names of 5,000 characters were stored and shown). */
const MAX_FILENAME = 255;

/** Keeps the first `max` bytes that pass through (for magic-byte detection) without buffering the rest. */
class HeadTap extends Transform {
  private readonly parts: Buffer[] = [];
  private kept = 0;
  constructor(private readonly max: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    if (this.kept < this.max) {
      const part = chunk.subarray(0, this.max - this.kept);
      this.parts.push(Buffer.from(part));
      this.kept += part.length;
    }
    cb(null, chunk);
  }
  head(): Buffer {
    return Buffer.concat(this.parts);
  }
}

const invalid = (msg: string) => new DomainError('VALIDATION_ERROR', msg);
const INTERRUPTED = 'The upload was interrupted before the request body was complete.';

/** `tags` sent as repeated fields, or as one JSON array string. */
function parseTags(values: string[]): string[] {
  const out: string[] = [];
  for (const v of values) {
    const s = v.trim();
    if (s === '') continue;
    if (s.startsWith('[')) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(s);
      } catch {
        throw invalid('tags: not a valid JSON array of tag ids.');
      }
      if (!Array.isArray(parsed) || !parsed.every((x): x is string => typeof x === 'string')) throw invalid('tags: must be an array of tag id strings.');
      out.push(...parsed);
    } else {
      out.push(s);
    }
  }
  return out;
}

/**
 * The file part as the blob store reads it, wired before anything can emit: an error of the
 * part (a body cut short, an aborted request) reaches the store through `tap` (it surfaces
 * in the store's read loop as the stream's error; the listener here only keeps node from
 * treating it as unhandled while the store is still opening its temp file), and when the
 * store stops early (too large, disk full) the part is drained instead of destroyed,
 * because busboy stalls the whole form on a part nobody reads.
 */
function partSource(part: Readable, tap: HeadTap): Readable {
  tap.on('error', () => undefined);
  part.on('error', (err) => tap.destroy(err));
  tap.on('close', () => {
    if (part.readableEnded || part.destroyed) return;
    part.unpipe(tap);
    part.resume();
  });
  part.pipe(tap);
  return tap;
}

/** The request stopped before its whole body arrived (client gone, or its time ran out). */
class RequestAbortedError extends Error {
  constructor() {
    super('the request was aborted before its body was complete');
  }
}

/**
 * Reads a multipart upload: the `file` part streams straight into the blob store (never
 * whole in memory; past `maxBytes` → 400 FILE_TOO_LARGE), the other fields are collected,
 * and the stored file's type is judged from its bytes and its name (400 INVALID_FILE_TYPE).
 * A file of an invalid type is removed again unless `blobInUse` says a document uses it.
 * A body that ends early answers 400; a request aborted mid-body leaves no temp file behind.
 */
export async function receiveUpload(req: Request, blobs: BlobStore, maxBytes: number, blobInUse: (sha256: string) => Promise<boolean>): Promise<ReceivedUpload> {
  const contentType = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data/i.test(contentType)) throw invalid('Upload the file as multipart/form-data with a `file` field.');
  // The route awaited auth before reading: the client may already be gone.
  if (req.destroyed) throw invalid(INTERRUPTED);
  let bb: busboy.Busboy;
  try {
    bb = busboy({ headers: req.headers, defParamCharset: 'utf8', limits: { files: 1, fields: 50, fieldSize: 64 * 1024, parts: 60, fileSize: maxBytes + 1 } });
  } catch {
    throw invalid('Malformed multipart/form-data request.');
  }

  // Field names are the client's: a Map, so `__proto__` or `constructor` are just names.
  const fieldValues = new Map<string, string[]>();
  let filePromise: Promise<{ blob: StoredBlob; head: Buffer; filename: string }> | undefined;
  let earlyError: DomainError | undefined;

  const done = new Promise<void>((resolve, reject) => {
    // Every listener is attached here, before the request is piped in and anything can emit.
    bb.on('field', (name, value) => {
      const key = name === 'tags[]' ? 'tags' : name;
      const list = fieldValues.get(key);
      if (list) list.push(value);
      else fieldValues.set(key, [value]);
    });
    bb.on('file', (name, stream, info) => {
      if (name !== 'file' || filePromise || earlyError) {
        // Ignored, but still a stream busboy may destroy with an error (body cut short).
        stream.on('error', () => undefined);
        stream.resume();
        return;
      }
      const filename = path.basename((info.filename ?? '').replace(/\\/g, '/')).trim();
      const ext = path.extname(filename).toLowerCase();
      // The name is shown to every member (and given to downloads): the text rule of names, as a title's.
      // Without it a bidi override made "salary\u202Etxt.exe.md" read as another file, whatever the title said.
      const nameProblem = !filename ? undefined : codePointLength(filename) > MAX_FILENAME ? `must be at most ${MAX_FILENAME} characters` : textProblem(filename, 'line');
      if (nameProblem) {
        earlyError = new DomainError('VALIDATION_ERROR', `The file's name ${nameProblem}.`);
        stream.on('error', () => undefined);
        stream.resume();
        return;
      }
      if (!filename || !SUPPORTED_EXTENSIONS.includes(ext)) {
        earlyError = new DomainError('INVALID_FILE_TYPE', `"${filename || '(no name)'}" has an unsupported type${ext ? ` (${ext})` : ''}; supported: ${SUPPORTED_EXTENSIONS.join(', ')}.`);
        stream.on('error', () => undefined);
        stream.resume();
        return;
      }
      const tap = new HeadTap(DETECT_HEAD_BYTES);
      filePromise = blobs.put(partSource(stream, tap), maxBytes).then((blob) => ({ blob, head: tap.head(), filename }));
      filePromise.catch(() => undefined);
    });
    bb.on('close', () => resolve());
    bb.on('error', (err) => {
      // Malformed or cut short: stop parsing, but keep reading the body so the 400 can be sent.
      req.unpipe(bb);
      if (!req.destroyed) req.resume();
      reject(err);
    });
    const aborted = () => {
      if (req.complete) return;
      // Busboy then destroys the file part, and the blob store removes its temp file.
      bb.destroy(new RequestAbortedError());
      reject(new RequestAbortedError());
    };
    req.on('aborted', aborted);
    req.on('close', aborted);
    req.on('error', aborted);
  });
  req.pipe(bb);
  try {
    await done;
  } catch (err) {
    // A file stored before the body broke off is nobody's: removed unless a document uses it.
    const stored = filePromise ? await filePromise.catch(() => undefined) : undefined;
    if (stored) await dropStored(blobs, stored.blob.sha256, blobInUse);
    throw invalid(err instanceof RequestAbortedError ? INTERRUPTED : 'Malformed multipart/form-data request: the body ended before the closing boundary, or a part is malformed.');
  }
  if (earlyError) throw earlyError;
  if (!filePromise) throw invalid('file: a `file` field with the document is required.');
  let received: { blob: StoredBlob; head: Buffer; filename: string };
  try {
    received = await filePromise;
  } catch (err) {
    if (err instanceof BlobTooLargeError) {
      throw new DomainError('FILE_TOO_LARGE', `The file exceeds the upload limit of ${maxBytes} bytes.`, { maxBytes });
    }
    throw err;
  }
  let type: DetectedType;
  try {
    type = await detectType({ filename: received.filename, head: received.head, size: received.blob.size, filePath: blobs.localPath?.(received.blob.sha256) });
  } catch (err) {
    await dropStored(blobs, received.blob.sha256, blobInUse);
    if (err instanceof InvalidFileTypeError) throw new DomainError('INVALID_FILE_TYPE', err.message);
    throw new DomainError('INVALID_FILE_TYPE', 'The file type could not be recognised.');
  }
  const single = (name: string): string | undefined => {
    const v = fieldValues.get(name);
    if (v && v.length > 1) throw invalid(`${name}: send it once.`);
    return v?.[0];
  };
  try {
    return { blob: received.blob, type, filename: received.filename, fields: { title: single('title'), purpose: single('purpose'), tags: parseTags(fieldValues.get('tags') ?? []) } };
  } catch (err) {
    await dropStored(blobs, received.blob.sha256, blobInUse);
    throw err;
  }
}

/** An upload's stored file it will not record: its hold ended (BlobStore.put), removed unless a document uses it. */
async function dropStored(blobs: BlobStore, sha256: string, blobInUse: (sha256: string) => Promise<boolean>): Promise<void> {
  blobs.release(sha256);
  const unused = async (): Promise<boolean> => !(await blobInUse(sha256).catch(() => true));
  if (await unused()) await blobs.delete(sha256, { stillUnused: unused }).catch(() => undefined);
}

/** A document's title: the `title` field, or else the file's name. */
export const DocumentTitle = HumanName(255);

/**
 * A document upload as the use case takes it: the file stored (see receiveUpload), the title
 * (or the file's name) and the purpose decoded. Invalid fields remove the file again unless
 * `blobInUse` says a document uses it.
 */
export async function receiveDocumentUpload(req: Request, blobs: BlobStore, maxBytes: number, blobInUse: (sha256: string) => Promise<boolean>): Promise<StoredUpload> {
  const upload = await receiveUpload(req, blobs, maxBytes, blobInUse);
  try {
    const title = upload.fields.title?.trim() || upload.filename;
    decode(DocumentTitle, title);
    const purpose = upload.fields.purpose !== undefined && upload.fields.purpose.trim() !== '' ? decode(Purpose, upload.fields.purpose.trim().toUpperCase()) : undefined;
    return { blob: upload.blob, kind: upload.type.kind, mimeType: upload.type.mimeType, filename: upload.filename, title, purpose, tags: upload.fields.tags };
  } catch (err) {
    await dropStored(blobs, upload.blob.sha256, blobInUse);
    throw err;
  }
}
