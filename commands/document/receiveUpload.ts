import busboy from 'busboy';
import path from 'node:path';
import { PassThrough, Transform, TransformCallback } from 'node:stream';
import { Request } from 'express';
import { BlobStore, BlobTooLargeError, StoredBlob } from '../../src/ports/blobStore';
import { DomainError } from '../../src/domain/errors';
import { DETECT_HEAD_BYTES, DetectedType, detectType, InvalidFileTypeError, SUPPORTED_EXTENSIONS } from '../../src/processing/detectType';

export interface ReceivedUpload {
  blob: StoredBlob;
  type: DetectedType;
  filename: string;
  fields: { title?: string; purpose?: string; tags: string[] };
}

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
 * Reads a multipart upload: the `file` part streams straight into the blob store (never
 * whole in memory; past `maxBytes` → 400 FILE_TOO_LARGE), the other fields are collected,
 * and the stored file's type is judged from its bytes and its name (400 INVALID_FILE_TYPE).
 * A file of an invalid type is removed again unless `blobInUse` says a document uses it.
 */
export async function receiveUpload(req: Request, blobs: BlobStore, maxBytes: number, blobInUse: (sha256: string) => Promise<boolean>): Promise<ReceivedUpload> {
  const contentType = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data/i.test(contentType)) throw invalid('Upload the file as multipart/form-data with a `file` field.');
  let bb: busboy.Busboy;
  try {
    bb = busboy({ headers: req.headers, defParamCharset: 'utf8', limits: { files: 1, fields: 50, fieldSize: 64 * 1024, parts: 60, fileSize: maxBytes + 1 } });
  } catch {
    throw invalid('Malformed multipart/form-data request.');
  }

  // Keyed by client-chosen field names: a Map, so `constructor` or `__proto__` is just a name.
  const fieldValues = new Map<string, string[]>();
  let filePromise: Promise<{ blob: StoredBlob; head: Buffer; filename: string }> | undefined;
  let earlyError: DomainError | undefined;

  const done = new Promise<void>((resolve, reject) => {
    bb.on('field', (name, value) => {
      const key = name === 'tags[]' ? 'tags' : name;
      fieldValues.set(key, [...(fieldValues.get(key) ?? []), value]);
    });
    bb.on('file', (name, stream, info) => {
      if (name !== 'file' || filePromise || earlyError) {
        stream.resume();
        return;
      }
      const filename = path.basename((info.filename ?? '').replace(/\\/g, '/')).trim();
      const ext = path.extname(filename).toLowerCase();
      if (!filename || !SUPPORTED_EXTENSIONS.includes(ext)) {
        earlyError = new DomainError('INVALID_FILE_TYPE', `"${filename || '(no name)'}" has an unsupported type${ext ? ` (${ext})` : ''}; supported: ${SUPPORTED_EXTENSIONS.join(', ')}.`);
        stream.resume();
        return;
      }
      const tap = new HeadTap(DETECT_HEAD_BYTES);
      const source = stream.pipe(tap).pipe(new PassThrough());
      stream.on('error', (err) => source.destroy(err));
      filePromise = blobs.put(source, maxBytes).then(
        (blob) => ({ blob, head: tap.head(), filename }),
        (err) => {
          // Keep draining the request so busboy reaches its end and the answer can be sent.
          stream.unpipe(tap);
          stream.resume();
          throw err;
        },
      );
      filePromise.catch(() => undefined);
    });
    bb.on('close', () => resolve());
    bb.on('error', (err) => reject(err));
  });
  req.pipe(bb);
  try {
    await done;
  } catch {
    if (filePromise) await filePromise.catch(() => undefined);
    throw invalid('Malformed multipart/form-data request.');
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
    if (!(await blobInUse(received.blob.sha256))) await blobs.delete(received.blob.sha256).catch(() => undefined);
    if (err instanceof InvalidFileTypeError) throw new DomainError('INVALID_FILE_TYPE', err.message);
    throw new DomainError('INVALID_FILE_TYPE', 'The file type could not be recognised.');
  }
  const single = (name: string): string | undefined => {
    const v = fieldValues.get(name);
    if (v && v.length > 1) throw invalid(`${name}: send it once.`);
    return v?.[0];
  };
  return { blob: received.blob, type, filename: received.filename, fields: { title: single('title'), purpose: single('purpose'), tags: parseTags(fieldValues.get('tags') ?? []) } };
}
