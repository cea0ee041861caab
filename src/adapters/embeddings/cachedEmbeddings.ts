import type { EmbeddingProvider } from '../../ports/embeddings';

export interface CachedEmbeddingsOptions {
  /** Entries kept (default 1000). */
  maxEntries?: number;
}

/**
 * LRU cache decorator for embeddings (meant for query embeddings: repeated queries
 * skip the model). Keys are model id + text; concurrent requests for the same text
 * share one model call. Returned vectors are shared: callers must not mutate them.
 */
export class CachedEmbeddings implements EmbeddingProvider {
  private readonly cache = new Map<string, Float32Array>();
  private readonly inflight = new Map<string, Promise<Float32Array>>();
  private readonly maxEntries: number;
  hits = 0;
  misses = 0;

  constructor(
    readonly inner: EmbeddingProvider,
    options: CachedEmbeddingsOptions = {},
  ) {
    this.maxEntries = Math.max(1, Math.floor(options.maxEntries ?? 1000));
  }

  get modelId(): string {
    return this.inner.modelId;
  }

  get dimensions(): number {
    return this.inner.dimensions;
  }

  async warmup(options?: { documents?: boolean }): Promise<void> {
    await this.inner.warmup?.(options);
  }

  /** Documents' texts go to the inner provider's own path when it has one (not through the cache, which is for queries). */
  embedDocuments(texts: string[]): Promise<Float32Array[]> {
    return this.inner.embedDocuments ? this.inner.embedDocuments(texts) : this.embed(texts);
  }

  private key(text: string, scope = ''): string {
    return `${scope}\u0000${this.inner.modelId}\u0000${text}`;
  }

  embed(texts: string[]): Promise<Float32Array[]> {
    return this.embedIn('', texts);
  }

  /**
   * Queries of one scope (a workspace): cached and shared (in flight) only within it. One cache
   * for all let a tenant time its own query to learn whether another tenant had just asked the
   * same text (a remote model answers a miss in 100+ ms, a hit at once; sixth hostile look).
   */
  async embedIn(scope: string, texts: string[]): Promise<Float32Array[]> {
    const result = new Array<Float32Array | Promise<Float32Array>>(texts.length);
    const missing: string[] = [];
    const missingKeys: string[] = [];
    for (let i = 0; i < texts.length; i++) {
      const key = this.key(texts[i], scope);
      const hit = this.cache.get(key);
      if (hit) {
        this.cache.delete(key); // refresh recency
        this.cache.set(key, hit);
        this.hits++;
        result[i] = hit;
        continue;
      }
      const pending = this.inflight.get(key);
      if (pending) {
        this.hits++;
        result[i] = pending;
        continue;
      }
      this.misses++;
      if (!missingKeys.includes(key)) {
        missingKeys.push(key);
        missing.push(texts[i]);
      }
    }
    if (missing.length > 0) {
      const call = this.inner.embed(missing);
      missingKeys.forEach((key, j) => {
        const p = call.then((vs) => vs[j]);
        p.catch(() => undefined);
        this.inflight.set(key, p);
      });
      try {
        const vectors = await call;
        missingKeys.forEach((key, j) => this.store(key, vectors[j]));
      } finally {
        for (const key of missingKeys) this.inflight.delete(key);
      }
      for (let i = 0; i < texts.length; i++) {
        if (result[i] === undefined) result[i] = this.cache.get(this.key(texts[i], scope)) ?? (await call)[missingKeys.indexOf(this.key(texts[i], scope))];
      }
    }
    return Promise.all(result);
  }

  private store(key: string, vector: Float32Array): void {
    this.cache.set(key, vector);
    while (this.cache.size > this.maxEntries) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
  }

  get size(): number {
    return this.cache.size;
  }

  async close(): Promise<void> {
    this.cache.clear();
    await this.inner.close();
  }
}
