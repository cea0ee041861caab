import { Readable } from 'node:stream';

export interface StoredBlob {
  sha256: string;
  size: number;
}

/** Content-addressed storage of uploaded files. */
export interface BlobStore {
  /** Stream `source` in, stopping with BlobTooLargeError past `maxBytes`. Same content, same address. */
  put(source: Readable, maxBytes: number): Promise<StoredBlob>;
  get(sha256: string): Promise<Readable>;
  /** Path on local disk, when the store has one (extractors that need a file). */
  localPath?(sha256: string): string;
  exists(sha256: string): Promise<boolean>;
  delete(sha256: string): Promise<void>;
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
