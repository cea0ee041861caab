/** Turns text into vectors. Implementations batch and may run off the event loop. */
export interface EmbeddingProvider {
  /** Identifier of the model, recorded with every vector (e.g. `local:use-lite-512`). */
  readonly modelId: string;
  readonly dimensions: number;
  embed(texts: string[]): Promise<Float32Array[]>;
  /** Loads the model ahead of the first call (optional: remote providers have nothing to load). */
  warmup?(): Promise<void>;
  close(): Promise<void>;
}

export const EMBEDDINGS = Symbol('EMBEDDINGS');
