import { Config } from '../../config/config';
import { EmbeddingProvider } from '../../ports/embeddings';
import { LocalEmbeddings } from './localEmbeddings';
import { OpenAIEmbeddings } from './openaiEmbeddings';
import { CachedEmbeddings } from './cachedEmbeddings';

/**
 * The configured embedding provider behind an LRU cache: repeated texts (above all,
 * repeated search queries) are embedded once.
 */
export function createEmbeddingProvider(config: Config): EmbeddingProvider {
  const inner: EmbeddingProvider =
    config.embeddings === 'openai'
      ? new OpenAIEmbeddings({ apiKey: config.openai.apiKey ?? 'not-needed', baseURL: config.openai.baseUrl, model: config.openai.model, dimensions: config.openai.dimensions })
      : new LocalEmbeddings({ threads: config.embeddingThreads });
  return new CachedEmbeddings(inner, { maxEntries: 1000 });
}
