import { useEffect, useState } from 'preact/hooks';
import { del, get, Me, post, put, Workspace } from '../api';
import { navigate } from '../router';
import { Confirm, ErrorBox, useLoad, when } from '../ui';
import { useSubmit } from '../useSubmit';
import { Members, Tags } from './team';
import { Withheld, WithheldReason } from '../withheld';

const ROLE_WORDS: Record<string, string> = { OWNER: 'Owner', ADMIN: 'Admin', MEMBER: 'Member', VIEWER: 'Viewer' };
export const roleWord = (r: string) => ROLE_WORDS[r] ?? r;

const WITHHELD_WORDS: Record<WithheldReason, { one: string; many: string; act: { text: string; href?: string } }> = {
  MFA_ENROLMENT_REQUIRED: {
    one: 'it requires two-step sign-in (a second factor).',
    many: 'they require two-step sign-in (a second factor).',
    act: { text: 'Set it up in your account', href: '/app/settings/account#second-factor' },
  },
  EMAIL_NOT_VERIFIED: {
    one: 'it requires a confirmed e-mail address.',
    many: 'they require a confirmed e-mail address.',
    act: { text: 'Confirm your address in your account', href: '/app/settings/account#email' },
  },
  OTHER: {
    one: 'your account does not meet its access requirements.',
    many: 'your account does not meet their access requirements.',
    act: { text: 'Ask the workspace’s owner what it requires.' },
  },
};

/** Why some of the caller's workspaces are not listed, one line per reason, each with where to act. */
export function WithheldNotice({ withheld }: { withheld: Withheld | null }) {
  if (!withheld) return null;
  // A workspace withheld for want of a confirmed address means the caller's address is not confirmed.
  const unconfirmed = withheld.reasons.some((r) => r.reason === 'EMAIL_NOT_VERIFIED');
  return (
    <div class="notice withheld" role="status" data-testid="withheld-notice">
      {withheld.reasons.map(({ reason, count }) => {
        const words = WITHHELD_WORDS[reason];
        return (
          <p key={reason}>
            {count === 1 ? `1 workspace is hidden: ${words.one}` : `${count} workspaces are hidden: ${words.many}`}{' '}
            {words.act.href ? <a href={words.act.href}>{words.act.text}</a> : words.act.text}
            {/* The server sets a second factor up on a confirmed address only. */}
            {reason === 'MFA_ENROLMENT_REQUIRED' && unconfirmed ? ' once your address is confirmed' : null}
            {words.act.href ? '.' : null}
          </p>
        );
      })}
    </div>
  );
}

export function Workspaces({ workspaces, withheld }: { workspaces: { data?: Workspace[]; loading: boolean; reload: () => void }; withheld: Withheld | null }) {
  const [name, setName] = useState('');
  const { busy, error, run } = useSubmit();
  return (
    <section>
      <h1>Workspaces</h1>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => {
            const w = await post<Workspace>('/v1/workspaces', { name });
            setName('');
            workspaces.reload();
            navigate(`/w/${w.id}/documents`);
          });
        }}
      >
        <label class="grow">
          New workspace name
          <input name="workspace-name" required maxLength={200} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="primary" disabled={busy}>
          Create workspace
        </button>
      </form>
      <ErrorBox error={error} />
      {workspaces.loading && !workspaces.data ? <p role="status">Loading…</p> : null}
      <WithheldNotice withheld={withheld} />
      {workspaces.data && workspaces.data.length === 0 && !withheld ? <p class="muted">You are in no workspace yet: create one above.</p> : null}
      <ul class="cards">
        {workspaces.data?.map((w) => (
          <li key={w.id} class="card">
            <a href={`/app/w/${w.id}/documents`} class="card-title">
              {w.name}
            </a>
            <p class="muted">
              {roleWord(w.role)} · {w.documentCount} document{w.documentCount === 1 ? '' : 's'} · {w.memberCount} member{w.memberCount === 1 ? '' : 's'}
            </p>
            <p class="muted small">Created {when(w.createdAt)}</p>
          </li>
        ))}
      </ul>
    </section>
  );
}

export function WorkspaceSettings({ wsId, onChanged }: { wsId: string; onChanged: () => void }) {
  const ws = useLoad(() => get<Workspace>(`/v1/workspaces/${wsId}`), [wsId]);
  const me = useLoad(() => get<Me>('/v1/auth/me'), []);
  const [name, setName] = useState('');
  const { busy, error, run } = useSubmit();
  const [saved, setSaved] = useState(false);
  const [confirm, setConfirm] = useState(false);
  useEffect(() => {
    if (ws.data) setName(ws.data.name);
  }, [ws.data]);
  if (ws.error) return <ErrorBox error={ws.error} />;
  if (!ws.data) return <p role="status">Loading…</p>;
  const w = ws.data;
  return (
    <section>
      <h1>Workspace settings</h1>
      <p class="muted">Your role: {roleWord(w.role)}</p>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          setSaved(false);
          void run(async () => {
            await put(`/v1/workspaces/${wsId}`, { name });
            setSaved(true);
            ws.reload();
            onChanged();
          });
        }}
      >
        <label class="grow">
          Name
          <input name="rename" required maxLength={200} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="primary" disabled={busy}>
          Rename
        </button>
      </form>
      {saved ? <p role="status">Saved.</p> : null}
      <ErrorBox error={error} />
      {w.settings ? (
        <fieldset>
          <legend>Settings</legend>
          <label class="check">
            <input
              type="checkbox"
              checked={w.settings.allowPublicSearchLinks}
              disabled={w.role === 'MEMBER'}
              onChange={(e) => {
                const allowPublicSearchLinks = (e.target as HTMLInputElement).checked;
                void run(() => put(`/v1/workspaces/${wsId}`, { settings: { allowPublicSearchLinks } })).then(() => ws.reload());
              }}
            />
            Allow public search links
          </label>
          <label>
            Default purpose of new documents
            <select
              value={w.settings.defaultDocumentPurpose}
              disabled={w.role === 'MEMBER'}
              onChange={(e) => {
                const defaultDocumentPurpose = (e.target as HTMLSelectElement).value;
                void run(() => put(`/v1/workspaces/${wsId}`, { settings: { defaultDocumentPurpose } })).then(() => ws.reload());
              }}
            >
              <option value="KNOWLEDGE">Knowledge</option>
              <option value="INSTRUCTION">Instruction</option>
            </select>
          </label>
        </fieldset>
      ) : null}
      <Members
        wsId={wsId}
        myRole={w.role}
        myId={me.data?.id}
        onRoleChanged={() => {
          ws.reload();
          onChanged();
        }}
      />
      <Tags wsId={wsId} myRole={w.role} />
      <h2>Danger zone</h2>
      <p>Deleting the workspace removes its documents, search links and instruction sets. Only the owner can do it.</p>
      <button type="button" class="danger" onClick={() => setConfirm(true)} disabled={w.role !== 'OWNER'}>
        Delete workspace…
      </button>
      <Confirm
        open={confirm}
        title="Delete this workspace?"
        message={`“${w.name}” and everything in it will be deleted. This cannot be undone.`}
        action="Delete workspace"
        onClose={() => setConfirm(false)}
        onConfirm={async () => {
          await del(`/v1/workspaces/${wsId}`);
          localStorage.removeItem('kb-console-workspace');
          onChanged();
          navigate('/workspaces');
        }}
      />
    </section>
  );
}
