/**
 * Holds on blobs by address, counted (BlobStore.put / release): a held blob is not deleted.
 * A deletion asked for meanwhile waits for the last release (`defer`), then runs if its
 * check still says the blob is unused.
 */
export class BlobHolds {
  private readonly count = new Map<string, number>();
  private readonly deferred = new Map<string, (() => void)[]>();

  hold(sha256: string): void {
    this.count.set(sha256, (this.count.get(sha256) ?? 0) + 1);
  }

  release(sha256: string): void {
    const n = this.count.get(sha256) ?? 0;
    if (n > 1) {
      this.count.set(sha256, n - 1);
      return;
    }
    this.count.delete(sha256);
    const waiting = this.deferred.get(sha256);
    this.deferred.delete(sha256);
    for (const run of waiting ?? []) run();
  }

  isHeld(sha256: string): boolean {
    return this.count.has(sha256);
  }

  /** Runs `run` once the blob's last hold is released (the blob is held now). */
  defer(sha256: string, run: () => void): void {
    const list = this.deferred.get(sha256);
    if (list) list.push(run);
    else this.deferred.set(sha256, [run]);
  }
}

/** A deletion that waited for the blob's holds: asked again, and done if still unused (errors are dropped, as a sweep's are). */
export async function deferredDelete(store: { delete(sha256: string, options?: { stillUnused?: () => Promise<boolean> }): Promise<boolean> }, sha256: string, stillUnused: () => Promise<boolean>): Promise<void> {
  try {
    if (await stillUnused()) await store.delete(sha256, { stillUnused });
  } catch {
    // The blob stays; the next deletion of these bytes removes it.
  }
}
