import { RecordedEvent } from '../domain/event';
import { auditFieldsOf } from '../domain/eventCatalog';
import { shownLine } from '../util/text';

/*
 * What an audit entry may say about each event type is declared beside the event type
 * (EventTraits.audit): a whitelist of `data` fields. Text, vectors, tokens and every kind
 * of hash are never listed; an unknown type shows its ids only. Values must be scalars,
 * arrays of scalars or flat objects of scalars.
 */

/** Never shown, whatever a whitelist says (defence in depth). */
const FORBIDDEN = /(hash|password|secret|cipher|vector|embedding|^token$|^tokens$|^content$|^text$|^sections$|^chunks$|^key$|^apiKey$)/i;
const ID_FIELD = /(Id|Ids)$/;

type Scalar = string | number | boolean | null;
const isScalar = (v: unknown): v is Scalar => v === null || ['string', 'number', 'boolean'].includes(typeof v);

function safeValue(v: unknown): unknown {
  if (isScalar(v)) return v;
  if (Array.isArray(v)) return v.every(isScalar) ? v : undefined;
  if (typeof v === 'object' && v !== null) {
    const out: Record<string, Scalar> = {};
    for (const [k, x] of Object.entries(v)) if (!FORBIDDEN.test(k) && isScalar(x)) out[k] = x;
    return out;
  }
  return undefined;
}

/**
 * What the patterns say of each field name seen so far (a log has few distinct ones): every
 * event of a rebuild is summarised, once for the audit trail and once more for an account's.
 */
const fieldNames = new Map<string, { forbidden: boolean; id: boolean }>();
function fieldName(k: string): { forbidden: boolean; id: boolean } {
  let f = fieldNames.get(k);
  if (!f) {
    f = { forbidden: FORBIDDEN.test(k), id: ID_FIELD.test(k) };
    if (fieldNames.size < 10_000) fieldNames.set(k, f);
  }
  return f;
}

/** Each event type's whitelist as a set (the catalog is fixed at start). */
const allowedFields = new Map<string, ReadonlySet<string>>();
function allowedOf(type: string): ReadonlySet<string> {
  let a = allowedFields.get(type);
  if (!a) {
    a = new Set(auditFieldsOf(type));
    if (allowedFields.size < 10_000) allowedFields.set(type, a);
  }
  return a;
}

/** The fields of an event an audit entry shows: its ids, plus its type's whitelisted fields. */
export function summarize(type: string, data: unknown): Record<string, unknown> {
  if (data === null || typeof data !== 'object') return {};
  const d = data as Record<string, unknown>;
  const allowed = allowedOf(type);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(d)) {
    const name = fieldName(k);
    if (name.forbidden || k === 'workspaceId') continue;
    const isId = name.id && (typeof v === 'string' || (Array.isArray(v) && v.every((x) => typeof x === 'string')));
    if (!isId && !allowed.has(k)) continue;
    // A file's name from before uploads refused control and bidi characters: shown neutralized, as the documents' view shows it.
    const safe = k === 'filename' && typeof v === 'string' ? shownLine(v) : safeValue(v);
    if (safe !== undefined) out[k] = safe;
  }
  // Never `erased`: an event reads as erased only once its document's key is destroyed, so
  // the flag would say when the projection ran (live: before the deletion; a rebuild or a
  // catch-up after a crash: after), not what the log holds, and the audit trail would differ
  // from its rebuild. The fields kept here are never sealed text, so they read the same either way.
  return out;
}

export interface AuditSubject {
  type: string;
  id: string;
}

const STREAM_SUBJECTS: Record<string, string> = {
  workspace: 'workspace',
  document: 'document',
  instructionset: 'set',
  set: 'set',
  searchlink: 'link',
  link: 'link',
  apikey: 'api_key',
  session: 'session',
  user: 'user',
};

/** What an event is about: a member, tag or invitation inside a workspace, else its stream's aggregate. */
export function subjectOf(e: Pick<RecordedEvent, 'type' | 'streamId' | 'data'>): AuditSubject {
  const d = (e.data ?? {}) as Record<string, unknown>;
  const str = (k: string): string | null => (typeof d[k] === 'string' ? (d[k] as string) : null);
  if (e.type.startsWith('Member') && str('userId')) return { type: 'member', id: str('userId') as string };
  if (e.type.startsWith('Invitation') && str('invitationId')) return { type: 'invitation', id: str('invitationId') as string };
  if (e.type.startsWith('Tag') && str('tagId')) return { type: 'tag', id: str('tagId') as string };
  const dash = e.streamId.indexOf('-');
  const prefix = dash > 0 ? e.streamId.slice(0, dash) : e.streamId;
  const rest = dash > 0 ? e.streamId.slice(dash + 1) : e.streamId;
  const type = STREAM_SUBJECTS[prefix.toLowerCase()] ?? prefix;
  const byField: Record<string, string[]> = {
    document: ['documentId'],
    set: ['setId', 'instructionSetId'],
    link: ['linkId', 'searchLinkId'],
    workspace: ['workspaceId'],
    user: ['userId'],
    api_key: ['keyId'],
    session: ['sessionId'],
  };
  for (const k of byField[type] ?? []) if (str(k)) return { type, id: str(k) as string };
  return { type, id: rest };
}

/** The workspace an event belongs to, if any. */
export function workspaceOf(e: Pick<RecordedEvent, 'metadata' | 'data'>): string | null {
  if (e.metadata?.workspaceId) return e.metadata.workspaceId;
  const w = (e.data as Record<string, unknown> | null)?.workspaceId;
  return typeof w === 'string' ? w : null;
}
