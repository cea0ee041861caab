import { useState } from 'preact/hooks';
import { AuditEntry, get } from '../api';
import { ErrorBox, useLoad, when } from '../ui';

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
  return (
    <section>
      <h1>Audit trail</h1>
      <p class="muted">Who did what, when, in this workspace (admins and owners), newest first.</p>
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
          Actor (user id)
          <input name="actor" value={actor} onInput={(e) => setActor((e.target as HTMLInputElement).value)} />
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
