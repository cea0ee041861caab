import { domainError } from '../errors';
import { EmbeddingModelEvent, ModelChangeCancelReason, VectorModel } from './events';

export interface ModelChange {
  changeId: string;
  from: VectorModel;
  to: VectorModel;
}

export interface EmbeddingModelState {
  /** The model searches answer with, once a change completed (before: whatever built the index). */
  active?: VectorModel;
  change?: ModelChange;
}

export type EmbeddingModelCommand =
  /** Move to `to`; `from` is the model the search index answers with now (used when the log names none yet). */
  | { type: 'StartModelChange'; changeId: string; from: VectorModel; to: VectorModel; now: Date }
  | { type: 'CompleteModelChange'; changeId: string; documents: number; now: Date }
  | { type: 'CancelModelChange'; reason: ModelChangeCancelReason; now: Date };

function initialState(): EmbeddingModelState {
  return {};
}

function evolve(s: EmbeddingModelState, e: EmbeddingModelEvent): EmbeddingModelState {
  switch (e.type) {
    case 'EmbeddingModelChangeStarted':
      return {
        active: s.active ?? { modelId: e.data.fromModelId, dimensions: e.data.fromDimensions },
        change: {
          changeId: e.data.changeId,
          from: { modelId: e.data.fromModelId, dimensions: e.data.fromDimensions },
          to: { modelId: e.data.toModelId, dimensions: e.data.dimensions },
        },
      };
    case 'EmbeddingModelChangeCompleted':
      return { active: { modelId: e.data.toModelId, dimensions: e.data.dimensions } };
    case 'EmbeddingModelChangeCancelled':
      return { ...(s.active ? { active: s.active } : {}) };
    default: {
      const _never: never = e;
      return _never;
    }
  }
}

function decide(c: EmbeddingModelCommand, s: EmbeddingModelState): EmbeddingModelEvent[] {
  switch (c.type) {
    case 'StartModelChange': {
      if (!c.to.modelId || !(c.to.dimensions > 0)) throw domainError('VALIDATION_ERROR', 'A model change needs a model id and its dimensions.');
      // Resuming the change under way: nothing to record.
      if (s.change?.to.modelId === c.to.modelId) return [];
      const from = s.active ?? c.from;
      const at = c.now.toISOString();
      const out: EmbeddingModelEvent[] = [];
      if (s.change) {
        const reason: ModelChangeCancelReason = c.to.modelId === from.modelId ? 'CONFIGURATION_REVERTED' : 'SUPERSEDED';
        out.push({ type: 'EmbeddingModelChangeCancelled', data: { changeId: s.change.changeId, toModelId: s.change.to.modelId, reason, cancelledAt: at } });
      }
      if (c.to.modelId === from.modelId) return out;
      out.push({
        type: 'EmbeddingModelChangeStarted',
        data: { changeId: c.changeId, fromModelId: from.modelId, fromDimensions: from.dimensions, toModelId: c.to.modelId, dimensions: c.to.dimensions, startedAt: at },
      });
      return out;
    }
    case 'CompleteModelChange':
      // A stale completion (the change was cancelled or superseded meanwhile) records nothing.
      if (s.change?.changeId !== c.changeId) return [];
      return [
        {
          type: 'EmbeddingModelChangeCompleted',
          data: { changeId: c.changeId, toModelId: s.change.to.modelId, dimensions: s.change.to.dimensions, documents: c.documents, completedAt: c.now.toISOString() },
        },
      ];
    case 'CancelModelChange':
      if (!s.change) return [];
      return [{ type: 'EmbeddingModelChangeCancelled', data: { changeId: s.change.changeId, toModelId: s.change.to.modelId, reason: c.reason, cancelledAt: c.now.toISOString() } }];
    default: {
      const _never: never = c;
      return _never;
    }
  }
}

export const embeddingModelDecider = { initialState, evolve, decide };
