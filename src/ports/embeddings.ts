/** Turns text into vectors. Implementations batch and may run off the event loop. */
export interface EmbeddingProvider {
  /** Identifier of the model, recorded with every vector (e.g. `local:use-lite-512`). */
  readonly modelId: string;
  readonly dimensions: number;
  embed(texts: string[]): Promise<Float32Array[]>;
  /**
   * Query texts of one scope (a workspace), optional: a provider that remembers queries keeps each
   * scope's apart, so whether a text was asked before (a cache hit answers faster) is never told
   * to another tenant. Callers fall back to `embed` when absent.
   */
  embedIn?(scope: string, texts: string[]): Promise<Float32Array[]>;
  /**
   * Texts of documents to index (optional): the same vectors as `embed`, possibly made off
   * the event loop and without the query cache. Callers fall back to `embed` when absent.
   */
  embedDocuments?(texts: string[]): Promise<Float32Array[]>;
  /**
   * Loads the model ahead of the first call (optional: remote providers have nothing to load).
   * `documents`: also what `embedDocuments` runs on (a thread of its own), for a process that
   * processes documents.
   */
  warmup?(options?: { documents?: boolean }): Promise<void>;
  close(): Promise<void>;
}

export const EMBEDDINGS = Symbol('EMBEDDINGS');

/**
 * The embedding models a deployment can make vectors with: the configured one (KB_EMBEDDINGS),
 * and others by model id, for a search index whose vectors another model made (the model
 * before a change, while the change is under way).
 */
export interface EmbeddingModels {
  readonly configured: EmbeddingProvider;
  /** A provider of `modelId`'s vectors (the configured one for its own id); undefined when this deployment cannot make them. */
  forModel(modelId: string): EmbeddingProvider | undefined;
  close(): Promise<void>;
}
