import { createHash } from 'node:crypto';
import { Transform, TransformCallback } from 'node:stream';
import { BlobTooLargeError } from '../../ports/blobStore';

/**
 * Pass-through that hashes (SHA-256) and counts the bytes flowing through it, failing
 * with BlobTooLargeError as soon as more than `maxBytes` have passed.
 */
export class HashingSizeLimit extends Transform {
  private readonly hash = createHash('sha256');
  private bytes = 0;

  constructor(private readonly maxBytes: number) {
    super();
  }

  override _transform(chunk: Buffer | string, _encoding: BufferEncoding, callback: TransformCallback): void {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    this.bytes += buf.length;
    if (this.bytes > this.maxBytes) {
      callback(new BlobTooLargeError(this.maxBytes));
      return;
    }
    this.hash.update(buf);
    callback(null, buf);
  }

  get size(): number {
    return this.bytes;
  }

  /** Hex digest; call once, after the stream finished. */
  digest(): string {
    return this.hash.digest('hex');
  }
}
