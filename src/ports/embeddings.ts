/** Turns text into vectors. Implementations batch and may run off the event loop. */
export interface EmbeddingProvider {
  /** Identifier of the model, recorded with every vector (e.g. `local:use-lite-512`). */
  readonly modelId: string;
  readonly dimensions: number;
  embed(texts: string[]): Promise<Float32Array[]>;
  close(): Promise<void>;
}

export const EMBEDDINGS = Symbol('EMBEDDINGS');
