import { createHash, randomBytes } from 'node:crypto';
import { constants as fsConstants, unlinkSync } from 'node:fs';
import { FileHandle, mkdir, open, rename, stat, unlink, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { BlobStore, BlobTooLargeError, StoredBlob } from '../../ports/blobStore';
import { BlobHolds, deferredDelete } from '../../util/blobHolds';

/** The requested blob is not in the store. */
export class BlobNotFoundError extends Error {
  readonly code = 'BLOB_NOT_FOUND' as const;
  constructor(readonly sha256: string) {
    super(`blob ${sha256} not found`);
    this.name = 'BlobNotFoundError';
  }
}

const SHA256_HEX = /^[0-9a-f]{64}$/;
const TEMP_DIR = '.tmp';

function assertSha(sha256: string): void {
  // Also what keeps a caller-supplied address from escaping the store directory.
  if (!SHA256_HEX.test(sha256)) throw new TypeError(`not a sha256 hex digest: ${JSON.stringify(sha256)}`);
}

function isErrno(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as NodeJS.ErrnoException).code === code;
}

/**
 * Embedded BlobStore: content-addressed files `<dir>/ab/cdef...` (sha256 hex, first two
 * characters as a sub-directory). `put` streams into a temp file under `<dir>/.tmp`
 * while hashing, fsyncs it, then renames it into place atomically (same file system), so a
 * blob at its address is always complete. Identical content is stored once.
 */
export class FsBlobStore implements BlobStore {
  private readonly holds = new BlobHolds();

  constructor(readonly dir: string) {}

  localPath(sha256: string): string {
    assertSha(sha256);
    return path.join(this.dir, sha256.slice(0, 2), sha256.slice(2));
  }

  async put(source: Readable, maxBytes: number): Promise<StoredBlob> {
    // Listen before the first await: the source may fail (a request cut short) while the temp
    // file is still being opened, and an 'error' nobody listens to takes the process down.
    // The error itself still reaches the read loop below (the stream is left errored).
    const ignoreUntilRead = (): void => undefined;
    source.on('error', ignoreUntilRead);
    const tmpDir = path.join(this.dir, TEMP_DIR);
    const tmpPath = path.join(tmpDir, `${Date.now()}-${randomBytes(8).toString('hex')}.part`);
    const hash = createHash('sha256');
    let size = 0;
    let fh: FileHandle | undefined;
    try {
      await mkdir(tmpDir, { recursive: true });
      fh = await open(tmpPath, fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_WRONLY, 0o600);
      // Pull-based: one chunk in memory at a time, and the source waits for the disk.
      for await (const chunk of source) {
        const buf: Buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
        size += buf.length;
        if (size > maxBytes) throw new BlobTooLargeError(maxBytes); // leaving the loop destroys `source`
        hash.update(buf);
        let off = 0;
        while (off < buf.length) off += (await fh.write(buf, off, buf.length - off)).bytesWritten;
      }
      await fh.sync();
      const written = fh;
      fh = undefined;
      await written.close();
      const sha256 = hash.digest('hex');
      const finalPath = this.localPath(sha256);
      // Held before it is looked up: a delete from now on leaves it (see BlobStore.put; the
      // check and the unlink of `delete` run in one turn of the event loop, so one that began
      // before this line has removed the file by the time `exists` looks).
      this.holds.hold(sha256);
      try {
        if (await this.exists(sha256)) {
          await unlink(tmpPath);
        } else {
          await mkdir(path.dirname(finalPath), { recursive: true });
          // Atomic; a concurrent put of the same content renames identical bytes over it.
          await rename(tmpPath, finalPath);
          await fsyncDir(path.dirname(finalPath));
        }
      } catch (err) {
        this.holds.release(sha256);
        throw err;
      }
      return { sha256, size };
    } catch (err) {
      // Whatever stopped it (source error, aborted request, too large, disk full): no handle, no temp file.
      if (fh) await fh.close().catch(() => undefined);
      await unlink(tmpPath).catch(() => undefined);
      if (!source.destroyed) source.destroy();
      throw err;
    } finally {
      source.off('error', ignoreUntilRead);
    }
  }

  async get(sha256: string): Promise<Readable> {
    const p = this.localPath(sha256);
    try {
      const fh = await open(p, 'r');
      return fh.createReadStream(); // closes the handle at end or on destroy
    } catch (err) {
      if (isErrno(err, 'ENOENT')) throw new BlobNotFoundError(sha256);
      throw err;
    }
  }

  async exists(sha256: string): Promise<boolean> {
    try {
      return (await stat(this.localPath(sha256))).isFile();
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return false;
      throw err;
    }
  }

  release(sha256: string): void {
    this.holds.release(sha256);
  }

  /** Idempotent: deleting a missing blob is not an error. While a put holds it, see BlobStore.delete. */
  async delete(sha256: string, options: { stillUnused?: () => Promise<boolean> } = {}): Promise<boolean> {
    const file = this.localPath(sha256);
    if (this.holds.isHeld(sha256)) {
      const { stillUnused } = options;
      if (stillUnused) this.holds.defer(sha256, () => void deferredDelete(this, sha256, stillUnused));
      return false;
    }
    try {
      // Synchronous: the hold check and the unlink in one turn (see put).
      unlinkSync(file);
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
    }
    return true;
  }

  /**
   * Removes temp files left by a crash mid-upload that were last written more than
   * `olderThanMs` ago (0: every one; what the server does at start-up, before it listens).
   */
  async removeStaleTempFiles(olderThanMs = 60 * 60 * 1000): Promise<number> {
    const tmpDir = path.join(this.dir, TEMP_DIR);
    let names: string[];
    try {
      names = await readdir(tmpDir);
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return 0;
      throw err;
    }
    let removed = 0;
    const cutoff = Date.now() - olderThanMs;
    for (const name of names) {
      const p = path.join(tmpDir, name);
      try {
        if ((await stat(p)).mtimeMs <= cutoff) {
          await unlink(p);
          removed++;
        }
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw err;
      }
    }
    return removed;
  }
}

/** Makes a rename durable (Linux/macOS); not supported everywhere, so best effort. */
async function fsyncDir(dir: string): Promise<void> {
  try {
    const fh = await open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    // e.g. EISDIR/EPERM on platforms that cannot fsync a directory
  }
}
