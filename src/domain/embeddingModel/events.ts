import { DomainEvent } from '../event';
import { EventCatalog } from '../eventTraits';

/** An embedding model, as its vectors record it: `modelId` (e.g. `local:glove-sif-100d`) and their dimensions. */
export interface VectorModel {
  modelId: string;
  dimensions: number;
}

/** Why a model change stopped before its switch. */
export type ModelChangeCancelReason = 'CONFIGURATION_REVERTED' | 'SUPERSEDED';

/**
 * The deployment's embedding model is one system stream (`embedding-model`), not a
 * document's: a change starts (the configured model differs from the one the search index
 * answers with), every VERIFIED document gets the new model's vectors in its own stream
 * (ChunksReembedded, DocumentReembedded), and the change completes, at which point the
 * index switches to the new vectors and drops the old ones. Replaying the log replays the
 * switch, so a rebuilt index ends on the current model.
 */
export type EmbeddingModelChangeStarted = DomainEvent<
  'EmbeddingModelChangeStarted',
  { changeId: string; fromModelId: string; fromDimensions: number; toModelId: string; dimensions: number; startedAt: string }
>;
/** Every VERIFIED document had the new model's vectors: searches switch to them. */
export type EmbeddingModelChangeCompleted = DomainEvent<
  'EmbeddingModelChangeCompleted',
  { changeId: string; toModelId: string; dimensions: number; documents: number; completedAt: string }
>;
/** The change stopped before its switch (the configuration went back, or named yet another model): its vectors are dropped. */
export type EmbeddingModelChangeCancelled = DomainEvent<
  'EmbeddingModelChangeCancelled',
  { changeId: string; toModelId: string; reason: ModelChangeCancelReason; cancelledAt: string }
>;

export type EmbeddingModelEvent = EmbeddingModelChangeStarted | EmbeddingModelChangeCompleted | EmbeddingModelChangeCancelled;

export const EMBEDDING_MODEL_STREAM = 'embedding-model';

const EMBEDDING_MODEL_EVENT_TYPES: ReadonlySet<string> = new Set(['EmbeddingModelChangeStarted', 'EmbeddingModelChangeCompleted', 'EmbeddingModelChangeCancelled']);

export function isEmbeddingModelEvent(e: { type: string }): e is EmbeddingModelEvent {
  return EMBEDDING_MODEL_EVENT_TYPES.has(e.type);
}

/** Audit traits: no text, no vectors; not entries of any workspace's trail (they belong to none). */
export const embeddingModelEventTraits: EventCatalog<EmbeddingModelEvent> = {
  EmbeddingModelChangeStarted: { audit: ['fromModelId', 'toModelId', 'dimensions'], encrypted: [], trail: false },
  EmbeddingModelChangeCompleted: { audit: ['toModelId', 'documents'], encrypted: [], trail: false },
  EmbeddingModelChangeCancelled: { audit: ['toModelId', 'reason'], encrypted: [], trail: false },
};
