import { Config } from '../../config/config';
import { EmbeddingProvider } from '../../ports/embeddings';
import { LocalEmbeddings } from './localEmbeddings';

/** The configured embedding provider. */
export function createEmbeddingProvider(config: Config): EmbeddingProvider {
  return new LocalEmbeddings({ threads: config.embeddingThreads });
}
