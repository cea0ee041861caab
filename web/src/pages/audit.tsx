import { useState } from 'preact/hooks';
import { AuditEntry, get, post, Workspace } from '../api';
import { ErrorBox, useLoad, when } from '../ui';
import { useSubmit } from '../useSubmit';

interface MemberRow {
  userId: string;
  email: string;
  name: string;
}

interface Verification {
  ok: boolean;
  checked: number;
  workspaceEvents: number;
  headPosition: number;
  firstBreak: { position: number; reason: string; inThisWorkspace: boolean; id?: string; type?: string } | null;
  startedAt: string;
  finishedAt: string;
}

/** "DocumentUploaded" → "Document uploaded": actions as words. */
export const actionWords = (a: string) => a.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/^./, (c) => c.toUpperCase()).replace(/ ([A-Z])/g, (_m, c: string) => ' ' + c.toLowerCase());

function localToIso(v: string): string | undefined {
  if (!v) return undefined;
  const t = new Date(v);
  return Number.isNaN(t.getTime()) ? undefined : t.toISOString();
}

export function Audit({ wsId }: { wsId: string }) {
  const [actor, setActor] = useState('');
  const [action, setAction] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [applied, setApplied] = useState({ actor: '', action: '', from: '', to: '' });
  // Cursors of the pages seen so far: back goes to the previous one.
  const [cursors, setCursors] = useState<string[]>(['']);
  const cursor = cursors[cursors.length - 1];
  const qs = new URLSearchParams({ limit: '25' });
  if (applied.actor) qs.set('actor', applied.actor);
  if (applied.action) qs.set('action', applied.action);
  const f = localToIso(applied.from);
  const t = localToIso(applied.to);
  if (f) qs.set('from', f);
  if (t) qs.set('to', t);
  if (cursor) qs.set('cursor', cursor);
  const page = useLoad(() => get<{ data: AuditEntry[]; nextCursor: string | null }>(`/v1/workspaces/${wsId}/audit?${qs}`), [wsId, qs.toString()]);
  const ws = useLoad(() => get<Workspace>(`/v1/workspaces/${wsId}`), [wsId]);
  const members = useLoad(() => get<MemberRow[]>(`/v1/workspaces/${wsId}/members`), [wsId]);
  // Actors named in the trail that are no longer members still show by id (typed in the filter before).
  const known = new Map((members.data ?? []).map((m) => [m.userId, m]));
  return (
    <section>
      <h1>Audit trail</h1>
      <p class="muted">Who did what, when, in this workspace (admins and owners), newest first.</p>
      {ws.data?.role === 'OWNER' ? <VerifyLog wsId={wsId} /> : null}
      <form
        class="filters"
        aria-label="Filter the audit trail"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied({ actor: actor.trim(), action: action.trim(), from, to });
          setCursors(['']);
        }}
      >
        <label>
          Actor
          <select name="actor" value={actor} onChange={(e) => setActor((e.target as HTMLSelectElement).value)}>
            <option value="">Anyone</option>
            {members.data?.map((m) => (
              <option key={m.userId} value={m.userId}>
                {m.name ? `${m.name} (${m.email})` : m.email}
              </option>
            ))}
            {actor && !known.has(actor) ? <option value={actor}>{actor}</option> : null}
          </select>
        </label>
        <label>
          Action
          <input name="action" placeholder="e.g. DocumentUploaded" value={action} onInput={(e) => setAction((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          From
          <input type="datetime-local" name="from" value={from} onInput={(e) => setFrom((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          To
          <input type="datetime-local" name="to" value={to} onInput={(e) => setTo((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Filter</button>
      </form>
      <ErrorBox error={page.error} />
      {page.data ? (
        <>
          {page.data.data.length === 0 ? <p class="muted">No entries match.</p> : null}
          <div class="table-wrap">
            <table class="audit">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Who</th>
                  <th scope="col">Action</th>
                  <th scope="col">Subject</th>
                  <th scope="col" class="wide-only">
                    Details
                  </th>
                </tr>
              </thead>
              <tbody>
                {page.data.data.map((e) => (
                  <tr key={e.id}>
                    <td>{when(e.time)}</td>
                    <td>
                      {e.actor.email ?? e.actor.userId ?? 'system'}
                      <span class="muted small"> via {e.actor.authMethod}</span>
                    </td>
                    <td data-action={e.action}>{actionWords(e.action)}</td>
                    <td>
                      {e.subject.type}{' '}
                      <code class="small" title={e.subject.id}>
                        {e.subject.id.slice(0, 8)}
                      </code>
                    </td>
                    <td class="wide-only small">{details(e, known)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <nav class="pager" aria-label="Pages">
            <button type="button" disabled={cursors.length <= 1} onClick={() => setCursors((c) => c.slice(0, -1))}>
              Newer
            </button>
            <button type="button" disabled={!page.data.nextCursor} onClick={() => page.data?.nextCursor && setCursors((c) => [...c, page.data!.nextCursor as string])}>
              Older
            </button>
          </nav>
        </>
      ) : page.loading ? (
        <p role="status">Loading…</p>
      ) : null}
    </section>
  );
}

const WORD_OF: Record<string, string> = { OWNER: 'Owner', ADMIN: 'Admin', MEMBER: 'Member', KNOWLEDGE: 'Knowledge', INSTRUCTION: 'Instruction' };

/** An entry's summary in a few words: user ids as the members' names, roles as words, other ids left out. */
function details(e: AuditEntry, known: Map<string, MemberRow>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(e.summary)) {
    if (/Id$/.test(k) && typeof v === 'string') {
      if (/userId$/i.test(k) && known.has(v)) parts.push(`${actionWords(k.replace(/UserId$|Id$/, '')) || 'user'}: ${known.get(v)?.name}`);
      continue;
    }
    if (v === null || typeof v === 'object') continue;
    parts.push(`${actionWords(k)}: ${typeof v === 'string' ? (WORD_OF[v] ?? v) : String(v)}`);
  }
  return parts.join(' · ');
}

/** Owners: re-walk the log's hash chain and say in words whether it is intact. */
function VerifyLog({ wsId }: { wsId: string }) {
  const { busy, error, run } = useSubmit();
  const [result, setResult] = useState<Verification | null>(null);
  return (
    <div class="verify">
      <div class="row">
        <button
          type="button"
          disabled={busy}
          onClick={() => {
            setResult(null);
            void run(async () => setResult(await post<Verification>(`/v1/workspaces/${wsId}/audit/verify`)));
          }}
        >
          {busy ? 'Verifying the log…' : 'Verify the log'}
        </button>
        <span class="muted small">Recomputes the hash chain of every event stored, so an edited, inserted or removed event shows. Owners only.</span>
      </div>
      <ErrorBox error={error} />
      {result ? (
        <div class={`notice ${result.ok ? 'verify-ok' : 'verify-broken'}`} role="status" data-testid="verify-result">
          {result.ok ? (
            <p>
              <strong>Intact.</strong> {result.checked.toLocaleString()} events checked ({result.workspaceEvents.toLocaleString()} of them this workspace's); the hash chain is unbroken up to
              position {result.headPosition.toLocaleString()}.
            </p>
          ) : (
            <p>
              <strong>Broken.</strong> The chain breaks at position {result.firstBreak?.position.toLocaleString()}: {result.firstBreak?.reason}.{' '}
              {result.firstBreak?.inThisWorkspace ? (
                <>
                  It is this workspace's event {result.firstBreak.type} <code>{result.firstBreak.id}</code>.
                </>
              ) : (
                "It is another workspace's event."
              )}{' '}
              Tell the operator of this server: `kb verify` names it, and everything after it is unproven.
            </p>
          )}
          <p class="muted small">Checked {when(result.finishedAt)}.</p>
        </div>
      ) : null}
    </div>
  );
}
