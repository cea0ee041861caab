/**
 * Processing failures by error code: how many runs failed with each code, in how many
 * documents, and the last time it happened.
 *
 *   npm run kb -- project examples/failuresByCode.ts [--workspace <id>] [--as-of 2026-01-01T00:00:00Z]
 */
import type { Document, KbEvent, Projection } from '../types/kb-events';

interface Row {
  code: Document.ProcessingFailureCode;
  failures: number;
  documents: number;
  lastAt: string;
}
interface State {
  byCode: Map<Document.ProcessingFailureCode, { failures: number; documents: Set<string>; lastAt: string }>;
}

export const initialState = (): State => ({ byCode: new Map() });

export function evolve(state: State, event: KbEvent): State {
  if (event.type !== 'DocumentProcessingFailed') return state;
  const entry = state.byCode.get(event.data.code) ?? { failures: 0, documents: new Set<string>(), lastAt: '' };
  entry.failures += 1;
  entry.documents.add(event.data.documentId);
  if (event.metadata.occurredAt > entry.lastAt) entry.lastAt = event.metadata.occurredAt;
  state.byCode.set(event.data.code, entry);
  return state;
}

export function result(state: State): Row[] {
  return [...state.byCode]
    .map(([code, e]) => ({ code, failures: e.failures, documents: e.documents.size, lastAt: e.lastAt }))
    .sort((a, b) => b.failures - a.failures || a.code.localeCompare(b.code));
}

export const projection: Projection<State, Row[]> = { initialState, evolve, result };
