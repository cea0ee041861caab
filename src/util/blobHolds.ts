/** Holds on blobs by address, counted (BlobStore.put / release): a held blob is not deleted. */
export class BlobHolds {
  private readonly count = new Map<string, number>();

  hold(sha256: string): void {
    this.count.set(sha256, (this.count.get(sha256) ?? 0) + 1);
  }

  release(sha256: string): void {
    const n = this.count.get(sha256) ?? 0;
    if (n <= 1) this.count.delete(sha256);
    else this.count.set(sha256, n - 1);
  }

  isHeld(sha256: string): boolean {
    return this.count.has(sha256);
  }
}
