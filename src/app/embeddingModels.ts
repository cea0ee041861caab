import type { EmbeddingModels, EmbeddingProvider } from '../ports/embeddings';

/** Models besides the configured one a process keeps at once (the one before a change, rarely more). */
const MAX_OTHER_MODELS = 4;

/**
 * The configured embedding provider, and providers of other models made on first use by
 * `make` (undefined: this deployment cannot make that model's vectors), kept for reuse.
 */
export class ConfiguredEmbeddingModels implements EmbeddingModels {
  private readonly others = new Map<string, EmbeddingProvider | undefined>();

  constructor(
    readonly configured: EmbeddingProvider,
    private readonly make: (modelId: string) => EmbeddingProvider | undefined,
  ) {}

  forModel(modelId: string): EmbeddingProvider | undefined {
    if (modelId === this.configured.modelId) return this.configured;
    if (this.others.has(modelId)) return this.others.get(modelId);
    if (this.others.size >= MAX_OTHER_MODELS) {
      const [oldest, provider] = this.others.entries().next().value as [string, EmbeddingProvider | undefined];
      this.others.delete(oldest);
      void provider?.close().catch(() => undefined);
    }
    const provider = this.make(modelId);
    this.others.set(modelId, provider);
    return provider;
  }

  /** Closes the other models' providers (the configured one is closed by its owner). */
  async close(): Promise<void> {
    const providers = [...this.others.values()];
    this.others.clear();
    await Promise.all(providers.map((p) => p?.close().catch(() => undefined)));
  }
}
