/**
 * Data keys, one per document, for the text its events carry (crypto-shredding).
 * Destroying a key makes that text unreadable everywhere the log is copied; a destroyed
 * key is remembered (a tombstone) so it is never silently created again.
 */
export interface KeyStore {
  /** The document's key; null when it has none yet or it was destroyed. */
  get(documentId: string): Promise<Buffer | null>;
  /** The document's key, created on first use; null when it was destroyed. */
  getOrCreate(documentId: string): Promise<Buffer | null>;
  /** Forget the key for good (idempotent). */
  destroy(documentId: string): Promise<void>;
  /** Whether the key was destroyed. */
  isDestroyed(documentId: string): Promise<boolean>;
  close(): Promise<void>;
}

export const KEY_STORE = Symbol('KEY_STORE');
