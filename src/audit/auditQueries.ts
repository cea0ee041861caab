import { AppContext } from '../app/context';
import { Filter } from '../ports/readStore';
import { AuthMethod } from '../domain/event';
import { auditEntriesCollection, AuditEntryView } from '../../projections/audit/auditProjection';
import { usersCollection } from '../../projections/user/userProjection';

export interface AuditQuery {
  workspaceId: string;
  from?: string;
  to?: string;
  actor?: string;
  actions?: string[];
  subject?: string;
  /** Entries strictly older (lower position) than this one. */
  beforePosition?: number;
  limit: number;
}

export interface AuditEntry {
  id: string;
  position: number;
  time: string;
  actor: { userId: string | null; email: string | null; authMethod: AuthMethod };
  action: string;
  subject: { type: string; id: string };
  summary: Record<string, unknown>;
  correlationId: string;
}

export const encodeCursor = (position: number): string => Buffer.from(`p:${position}`).toString('base64url');
export function decodeCursor(cursor: string): number | null {
  const m = /^p:(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  return m ? Number(m[1]) : null;
}

/** A workspace's audit entries, newest first, one page at a time. */
export async function listAuditEntries(ctx: AppContext, q: AuditQuery): Promise<{ data: AuditEntry[]; nextCursor: string | null }> {
  const filter: Filter = { workspaceId: q.workspaceId };
  if (q.from || q.to) filter.occurredAt = { ...(q.from ? { $gte: q.from } : {}), ...(q.to ? { $lte: q.to } : {}) };
  if (q.beforePosition !== undefined) filter.position = { $lt: q.beforePosition };
  if (q.actor) filter.actorId = q.actor;
  if (q.actions?.length) filter.action = { $in: q.actions };
  if (q.subject) filter.subjectId = q.subject;
  const rows = await auditEntriesCollection(ctx.readStore).find(filter, { sort: [{ field: 'position', direction: 'desc' }], limit: q.limit + 1 });
  const page = rows.slice(0, q.limit);
  const actorIds = [...new Set(page.map((r) => r.actorId).filter((x): x is string => !!x))];
  const users = new Map((await usersCollection(ctx.readStore).getMany(actorIds)).map((u) => [u.id, u.email]));
  return {
    data: page.map((r) => toEntry(r, users)),
    nextCursor: rows.length > q.limit ? encodeCursor(page[page.length - 1].position) : null,
  };
}

function toEntry(r: AuditEntryView, emails: Map<string, string>): AuditEntry {
  return {
    id: r.id,
    position: r.position,
    time: r.occurredAt,
    actor: { userId: r.actorId, email: r.actorId ? (emails.get(r.actorId) ?? null) : null, authMethod: r.authMethod },
    action: r.action,
    subject: { type: r.subjectType, id: r.subjectId },
    summary: r.summary,
    correlationId: r.correlationId,
  };
}
