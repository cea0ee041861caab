import { createHash } from 'node:crypto';
import type { EmbeddingModels, EmbeddingProvider } from '../../src/ports/embeddings';

/**
 * A deterministic embedder for tests: each word adds 1 at a position its hash (salted with
 * the model id) picks, then the vector is made unit length. Texts sharing words are close,
 * and two model ids give unrelated vectors of the same texts. `calls` records every batch.
 */
export function hashEmbedder(modelId: string, dimensions: number): EmbeddingProvider & { calls: string[][] } {
  const calls: string[][] = [];
  return {
    modelId,
    dimensions,
    calls,
    embed: async (texts) => {
      calls.push([...texts]);
      return texts.map((t) => {
        const v = new Float32Array(dimensions);
        for (const w of t.toLowerCase().match(/[a-z0-9]+/g) ?? []) v[createHash('sha1').update(`${modelId}/${w}`).digest().readUInt32BE(0) % dimensions] += 1;
        const n = Math.hypot(...v) || 1;
        return v.map((x) => x / n);
      });
    },
    close: async () => undefined,
  };
}

/** EmbeddingModels over a fixed set of providers, `configured` among them. */
export function fixedModels(configured: EmbeddingProvider, ...others: EmbeddingProvider[]): EmbeddingModels {
  const all = new Map([configured, ...others].map((p) => [p.modelId, p]));
  return { configured, forModel: (modelId) => all.get(modelId), close: async () => undefined };
}
