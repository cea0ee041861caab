import { Projection, readModelProjection } from '../../src/core/projection';
import { ReadStore } from '../../src/ports/readStore';
import { AuthMethod } from '../../src/domain/event';
import { subjectOf, summarize, workspaceOf } from '../../src/audit/summary';
import { inAuditTrail } from '../../src/domain/eventCatalog';

/** One event of a workspace as the audit trail shows it (never text, tokens or hashes). */
export interface AuditEntryView {
  id: string;
  workspaceId: string;
  position: number;
  occurredAt: string;
  actorId: string | null;
  authMethod: AuthMethod;
  correlationId: string;
  action: string;
  subjectType: string;
  subjectId: string;
  summary: Record<string, unknown>;
}

export const auditEntriesCollection = (s: ReadStore) =>
  s.collection<AuditEntryView>('audit_entries', [{ fields: ['workspaceId', 'position'] }, { fields: ['workspaceId', 'subjectId'] }]);

/** Every event that belongs to a workspace becomes an audit entry, but telemetry (searches). */
export function auditProjection(store: ReadStore): Projection {
  const entries = auditEntriesCollection(store);
  return readModelProjection('audit', store, ['audit_entries'], async (e) => {
    const workspaceId = workspaceOf(e);
    if (!workspaceId || !inAuditTrail(e.type)) return;
    const subject = subjectOf(e);
    await entries.put({
      id: e.id,
      workspaceId,
      position: e.position,
      occurredAt: e.metadata.occurredAt,
      actorId: e.metadata.actorId,
      authMethod: e.metadata.authMethod,
      correlationId: e.metadata.correlationId,
      action: e.type,
      subjectType: subject.type,
      subjectId: subject.id,
      summary: summarize(e.type, e.data),
    });
    // Version 2: summaries no longer carry `erased` (see summarize); a store of version 1 is
    // cleared and rebuilt from the log at start, so entries written before lose the flag too.
    // Version 3: a file's name is shown neutralized (see summarize); entries of version 2 are rebuilt.
  }, { version: 3 });
}
