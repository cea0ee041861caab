import { Readable } from 'node:stream';

export interface StoredBlob {
  sha256: string;
  size: number;
}

/** Content-addressed storage of uploaded files. */
export interface BlobStore {
  /**
   * Stream `source` in, stopping with BlobTooLargeError past `maxBytes`. Same content, same
   * address. The stored blob is then held: `delete` leaves it in place until `release` has
   * been called once for this put. An upload holds its file from storing it until its
   * document is recorded or refused, so that a deletion of the same bytes meanwhile (the last
   * other document using them deleted, another upload of them refused, the erasure service's
   * sweep), decided on a picture without this upload, cannot take the file from under it.
   * Holds are this process's: stores shared by several processes are not covered.
   */
  put(source: Readable, maxBytes: number): Promise<StoredBlob>;
  /** Ends one `put`'s hold of the blob (see `put`). */
  release(sha256: string): void;
  get(sha256: string): Promise<Readable>;
  /** Path on local disk, when the store has one (extractors that need a file). */
  localPath?(sha256: string): string;
  exists(sha256: string): Promise<boolean>;
  /**
   * Removes the blob. While a `put` of it holds it (see `put`), the deletion waits for the last
   * release and then happens if `stillUnused` (the caller's own check, asked again then) says
   * so; without it, a held blob is left. (A document recorded by the holding upload and deleted
   * before it let go would otherwise keep its file for ever.) Resolves false when the blob was
   * held (the deletion left to the release, which a crash forgets: a caller keeping a durable
   * to-do keeps it then), true when it is gone.
   */
  delete(sha256: string, options?: { stillUnused?: () => Promise<boolean> }): Promise<boolean>;
  /**
   * Stores that stage uploads under temporary names: remove those last modified more than
   * `olderThanMs` ago (left by a crash mid-upload); returns how many were removed. A store
   * shared by several processes may raise `olderThanMs` to a floor of its own.
   */
  removeStaleTempFiles?(olderThanMs: number): Promise<number>;
}

export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`file exceeds ${maxBytes} bytes`);
  }
}

export const BLOB_STORE = Symbol('BLOB_STORE');
