import type { EmbeddingModels, EmbeddingProvider } from '../ports/embeddings';
import type { SearchIndex, VectorModels } from '../ports/searchIndex';

/**
 * The embedder of the vectors searches use now: the search index's active model (the old
 * model while a change is under way), or the configured model while the index holds no
 * vector. Undefined when this deployment cannot make the active model's vectors: searches
 * then rank by BM25 alone, and new documents are embedded with the configured model.
 */
export async function activeEmbedder(index: SearchIndex, models: EmbeddingModels): Promise<EmbeddingProvider | undefined> {
  const { active } = await index.vectorModels();
  return active ? models.forModel(active.modelId) : models.configured;
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
