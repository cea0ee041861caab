import type { EmbeddingProvider } from '../../ports/embeddings';

/**
 * Concatenation of unit-length embeddings, each part scaled by √(its weight / Σ weights),
 * so the result is unit length and its cosine is the weighted mean of the parts' cosines.
 * Model id: `concat(<id>*<weight>,...)`.
 */
export class ConcatEmbeddings implements EmbeddingProvider {
  readonly modelId: string;
  readonly dimensions: number;
  private readonly factors: number[];

  constructor(readonly parts: { provider: EmbeddingProvider; weight: number }[]) {
    if (parts.length === 0) throw new Error('ConcatEmbeddings needs at least one part');
    const total = parts.reduce((s, p) => s + p.weight, 0);
    this.factors = parts.map((p) => Math.sqrt(p.weight / total));
    this.dimensions = parts.reduce((s, p) => s + p.provider.dimensions, 0);
    this.modelId = `concat(${parts.map((p) => `${p.provider.modelId}*${p.weight}`).join(',')})`;
  }

  async warmup(options?: { documents?: boolean }): Promise<void> {
    await Promise.all(this.parts.map((p) => p.provider.warmup?.(options)));
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    return this.combine(await Promise.all(this.parts.map((p) => p.provider.embed(texts))));
  }

  /** The concatenated vectors from each part's vectors (`results[part][text]`). */
  combine(results: Float32Array[][]): Float32Array[] {
    return results[0].map((_, i) => {
      const out = new Float32Array(this.dimensions);
      let off = 0;
      results.forEach((vs, k) => {
        const v = vs[i];
        const f = this.factors[k];
        let s = 0;
        for (let d = 0; d < v.length; d++) s += v[d] * v[d];
        // Parts are unit length, or zero (a text none of whose words the model knows).
        const inv = s > 0 ? f / Math.sqrt(s) : 0;
        for (let d = 0; d < v.length; d++) out[off + d] = v[d] * inv;
        off += this.parts[k].provider.dimensions;
      });
      return out;
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.parts.map((p) => p.provider.close()));
  }
}
