import type { EmbeddingModels, EmbeddingProvider } from '../ports/embeddings';
import type { SearchIndex, VectorModel, VectorModels } from '../ports/searchIndex';

/** The active model each index answered with last (searches do not ask the index every time). */
const knownActive = new WeakMap<SearchIndex, { active?: VectorModel }>();

/**
 * The embedder of the vectors searches use now: the search index's active model (the old
 * model while a change is under way), or the configured model while the index holds no
 * vector. Undefined when this deployment cannot make the active model's vectors: searches
 * then rank by BM25 alone, and new documents are embedded with the configured model.
 *
 * The answer is remembered per index; `fresh` asks the index again. A search that used a
 * model the index no longer answers with is refused by the index (VectorModelChangedError):
 * the caller then forgets it (forgetActiveModel) and asks again.
 */
export async function activeEmbedder(index: SearchIndex, models: EmbeddingModels, options: { fresh?: boolean } = {}): Promise<EmbeddingProvider | undefined> {
  let known = options.fresh ? undefined : knownActive.get(index);
  if (!known) {
    const { active } = await index.vectorModels();
    known = active ? { active } : {};
    knownActive.set(index, known);
  }
  return known.active ? models.forModel(known.active.modelId) : models.configured;
}

export function forgetActiveModel(index: SearchIndex): void {
  knownActive.delete(index);
}

/** Progress of an embedding model change, as the search index shows it (/readyz, the CLI). */
export interface ReembeddingProgress {
  from: string;
  to: string;
  /** Documents with the new model's vectors. */
  done: number;
  /** Documents indexed. */
  total: number;
}

/** The model change under way in the index, if any. */
export function reembeddingProgress(models: VectorModels): ReembeddingProgress | undefined {
  if (!models.next) return undefined;
  return { from: models.active?.modelId ?? 'none', to: models.next.modelId, done: Math.min(models.next.documents, models.documents), total: models.documents };
}
