/**
 * Documents uploaded and deleted per workspace per week (weeks start on Monday, UTC).
 *
 *   npm run kb -- project examples/documentsPerWeek.ts --format csv
 */
import type { KbEvent, Projection } from '../types/kb-events';

interface Row {
  workspaceId: string;
  week: string;
  uploaded: number;
  deleted: number;
}
type State = Map<string, Row>;

/** The Monday (UTC) of the week of an ISO time, as YYYY-MM-DD. */
function weekOf(iso: string): string {
  const d = new Date(iso);
  const day = (d.getUTCDay() + 6) % 7;
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - day)).toISOString().slice(0, 10);
}

export const initialState = (): State => new Map();

export function evolve(state: State, event: KbEvent): State {
  if (event.type !== 'DocumentUploaded' && event.type !== 'DocumentDeleted') return state;
  const week = weekOf(event.metadata.occurredAt);
  const key = `${event.data.workspaceId} ${week}`;
  const row = state.get(key) ?? { workspaceId: event.data.workspaceId, week, uploaded: 0, deleted: 0 };
  if (event.type === 'DocumentUploaded') row.uploaded += 1;
  else row.deleted += 1;
  state.set(key, row);
  return state;
}

export function result(state: State): Row[] {
  return [...state.values()].sort((a, b) => a.workspaceId.localeCompare(b.workspaceId) || a.week.localeCompare(b.week));
}

// Checked against the published types: a wrong field or event name does not compile.
export const projection: Projection<State, Row[]> = { initialState, evolve, result };
