import path from 'node:path';
import { Config } from '../../config/config';
import { EmbeddingProvider } from '../../ports/embeddings';
import { repoRoot } from '../../util/paths';
import { LocalEmbeddings } from './localEmbeddings';
import { OpenAIEmbeddings } from './openaiEmbeddings';
import { CachedEmbeddings } from './cachedEmbeddings';
import { GloveSifEmbeddings } from './gloveSifEmbeddings';
import { ConcatEmbeddings } from './concatEmbeddings';

/**
 * Local embedders by name (`KB_EMBEDDINGS`). `local` (the default) is the recommended local
 * embedder, `glove` today (chosen by measurement: README "Measured"); `use` is USE-lite, the
 * default before.
 */
export const LOCAL_EMBEDDERS = ['use', 'glove', 'use+glove'] as const;
export type LocalEmbedderName = (typeof LOCAL_EMBEDDERS)[number];
/** What `local` (the default `KB_EMBEDDINGS`) means. */
export const DEFAULT_LOCAL_EMBEDDER: LocalEmbedderName = 'glove';

export interface LocalEmbedderOptions {
  /** Worker threads of the USE model. */
  threads?: number;
  /** GloVe-SIF: documents embedded on a thread of its own (see GloveSifEmbeddings). */
  ingestThread?: boolean;
  /** Where the converted GloVe vectors are cached: the first writable directory. */
  cacheDirs?: string[];
  log?: (msg: string) => void;
}

/** Directories for converted model files: `<repo>/.cache/models` (shared by every data dir on the machine), then the data dir. */
export function modelCacheDirs(dataDir?: string, configured?: string): string[] {
  return [configured, path.join(repoRoot, '.cache', 'models'), dataDir ? path.join(dataDir, 'models') : undefined].filter((d): d is string => !!d);
}

export function createLocalEmbedder(name: LocalEmbedderName | 'local', options: LocalEmbedderOptions = {}): EmbeddingProvider {
  const glove = (ingestThread = false): GloveSifEmbeddings => new GloveSifEmbeddings({ cacheDirs: options.cacheDirs ?? modelCacheDirs(), log: options.log, ingestThread });
  const use = (): LocalEmbeddings => new LocalEmbeddings({ threads: options.threads });
  switch (name === 'local' ? DEFAULT_LOCAL_EMBEDDER : name) {
    case 'glove':
      return glove(options.ingestThread === true);
    case 'use+glove':
      return new ConcatEmbeddings([{ provider: use(), weight: 1 }, { provider: glove(), weight: 1 }]);
    case 'use':
      return use();
  }
}

/**
 * The configured embedding provider behind an LRU cache: repeated texts (above all,
 * repeated search queries) are embedded once.
 */
export function createEmbeddingProvider(config: Config, log?: (msg: string) => void): EmbeddingProvider {
  const inner: EmbeddingProvider =
    config.embeddings === 'openai'
      ? new OpenAIEmbeddings({ apiKey: config.openai.apiKey ?? 'not-needed', baseURL: config.openai.baseUrl, model: config.openai.model, dimensions: config.openai.dimensions })
      : createLocalEmbedder(config.embeddings, { threads: config.embeddingThreads, cacheDirs: modelCacheDirs(config.dataDir, config.modelCacheDir), log, ingestThread: config.embeddingIngestThread });
  return new CachedEmbeddings(inner, { maxEntries: 1000 });
}

/**
 * A provider of the vectors of `modelId` (a model id recorded with vectors: the local models,
 * `openai:<model>[@<dimensions>]` through the configured key and endpoint), or undefined
 * when this deployment cannot make them (a variant with other parameters, a model of an
 * unknown origin). Behind an LRU cache, as the configured provider.
 */
export function embeddingProviderForModel(config: Config, modelId: string, log?: (msg: string) => void): EmbeddingProvider | undefined {
  const cacheDirs = modelCacheDirs(config.dataDir, config.modelCacheDir);
  const local = LOCAL_EMBEDDERS.find((name) => localModelId(name) === modelId);
  if (local) return new CachedEmbeddings(createLocalEmbedder(local, { threads: config.embeddingThreads, cacheDirs, log, ingestThread: config.embeddingIngestThread }), { maxEntries: 1000 });
  const openai = /^openai:([^@]+)(?:@(\d+))?$/.exec(modelId);
  if (openai && (config.openai.apiKey || config.openai.baseUrl)) {
    const dimensions = openai[2] !== undefined ? Number(openai[2]) : undefined;
    return new CachedEmbeddings(new OpenAIEmbeddings({ apiKey: config.openai.apiKey ?? 'not-needed', baseURL: config.openai.baseUrl, model: openai[1], dimensions }), { maxEntries: 1000 });
  }
  return undefined;
}

/** The model id a local embedder records (without loading it). */
export function localModelId(name: LocalEmbedderName | 'local'): string {
  const glove = 'local:glove-sif-100d';
  const use = 'local:use-lite-512';
  switch (name) {
    case 'glove':
    case 'local':
      return glove;
    case 'use':
      return use;
    case 'use+glove':
      return `concat(${use}*1,${glove}*1)`;
  }
}
