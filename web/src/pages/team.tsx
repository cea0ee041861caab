import { useState } from 'preact/hooks';
import { del, get, patch, post, put, Role, Tag, Workspace } from '../api';
import { navigate } from '../router';
import { Confirm, CopyButton, ErrorBox, useLoad, when } from '../ui';

const ROLES: Role[] = ['OWNER', 'ADMIN', 'MEMBER'];
const roleWord = (r: string) => ({ OWNER: 'Owner', ADMIN: 'Admin', MEMBER: 'Member' })[r] ?? r;

interface Member {
  userId: string;
  email: string;
  name: string;
  role: Role;
  joinedAt: string;
}

/** Members with their roles (change, remove), and invitations by e-mail with a link to accept. */
export function Members({ wsId, myRole }: { wsId: string; myRole: Role }) {
  const members = useLoad(() => get<Member[]>(`/v1/workspaces/${wsId}/members`), [wsId]);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('MEMBER');
  const [invite, setInvite] = useState<{ email: string; link: string; expiresAt: string } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [removing, setRemoving] = useState<Member | null>(null);
  const admin = myRole === 'OWNER' || myRole === 'ADMIN';
  return (
    <>
      <h2>Members</h2>
      <ErrorBox error={members.error ?? error} />
      <div class="table-wrap">
        <table class="members">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Role</th>
              <th scope="col" class="wide-only">
                Joined
              </th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {members.data?.map((m) => (
              <tr key={m.userId}>
                <td>
                  {m.name}
                  <br />
                  <span class="muted small">{m.email}</span>
                </td>
                <td>
                  {admin && m.role !== 'OWNER' ? (
                    <select
                      aria-label={`Role of ${m.name}`}
                      value={m.role}
                      onChange={async (e) => {
                        setError(null);
                        try {
                          await patch(`/v1/workspaces/${wsId}/members/${m.userId}`, { role: (e.target as HTMLSelectElement).value });
                        } catch (err) {
                          setError(err);
                        }
                        members.reload();
                      }}
                    >
                      {ROLES.map((r) => (
                        <option key={r} value={r}>
                          {roleWord(r)}
                        </option>
                      ))}
                    </select>
                  ) : (
                    roleWord(m.role)
                  )}
                </td>
                <td class="wide-only">{when(m.joinedAt)}</td>
                <td>
                  {admin && m.role !== 'OWNER' ? (
                    <button type="button" class="danger" aria-label={`Remove ${m.name}`} onClick={() => setRemoving(m)}>
                      Remove…
                    </button>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {admin ? (
        <form
          class="row"
          onSubmit={async (e) => {
            e.preventDefault();
            setError(null);
            try {
              const inv = await post<{ invitationId: string; email: string; expiresAt: string }>(`/v1/workspaces/${wsId}/invite`, { email, role });
              setInvite({ email: inv.email, link: `${location.origin}/app/invitations/${inv.invitationId}`, expiresAt: inv.expiresAt });
              setEmail('');
            } catch (err) {
              setError(err);
            }
          }}
        >
          <label class="grow">
            Invite by e-mail
            <input type="email" name="invite-email" required value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            As
            <select value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value as Role)}>
              <option value="MEMBER">Member</option>
              <option value="ADMIN">Admin</option>
            </select>
          </label>
          <button type="submit">Send invitation</button>
        </form>
      ) : null}
      {invite ? (
        <div class="notice" role="status">
          <p>
            Invitation for {invite.email}, valid until {when(invite.expiresAt)}. They accept it, signed in with that address, at:
          </p>
          <div class="row">
            <code class="secret">{invite.link}</code>
            <CopyButton text={invite.link} label="Copy link" />
          </div>
        </div>
      ) : null}
      <Confirm
        open={removing !== null}
        title="Remove this member?"
        message={`${removing?.name ?? ''} will lose access to the workspace.`}
        action="Remove member"
        onClose={() => setRemoving(null)}
        onConfirm={async () => {
          if (removing) await del(`/v1/workspaces/${wsId}/members/${removing.userId}`);
          members.reload();
        }}
      />
    </>
  );
}

/** Tags: create with a colour, rename, recolour, delete. */
export function Tags({ wsId, myRole }: { wsId: string; myRole: Role }) {
  const tags = useLoad(() => get<{ data: Tag[] }>(`/v1/workspaces/${wsId}/tags`).then((r) => r.data), [wsId]);
  const [name, setName] = useState('');
  const [color, setColor] = useState('#2357c6');
  const [error, setError] = useState<unknown>(null);
  const [deleting, setDeleting] = useState<Tag | null>(null);
  const admin = myRole === 'OWNER' || myRole === 'ADMIN';
  return (
    <>
      <h2>Tags</h2>
      <ErrorBox error={tags.error ?? error} />
      {tags.data && tags.data.length === 0 ? <p class="muted">No tags yet.</p> : null}
      <ul class="tag-list">
        {tags.data?.map((t) => (
          <li key={t.id} class="row">
            <label class="grow">
              <span class="sr-only">Name of tag {t.name}</span>
              <input
                value={t.name}
                disabled={!admin}
                aria-label={`Name of tag ${t.name}`}
                onChange={async (e) => {
                  setError(null);
                  try {
                    await put(`/v1/workspaces/${wsId}/tags/${t.id}`, { name: (e.target as HTMLInputElement).value });
                  } catch (err) {
                    setError(err);
                  }
                  tags.reload();
                }}
              />
            </label>
            <input
              type="color"
              value={t.color}
              disabled={!admin}
              aria-label={`Colour of tag ${t.name}`}
              onChange={async (e) => {
                setError(null);
                try {
                  await put(`/v1/workspaces/${wsId}/tags/${t.id}`, { color: (e.target as HTMLInputElement).value });
                } catch (err) {
                  setError(err);
                }
                tags.reload();
              }}
            />
            {admin ? (
              <button type="button" class="danger" aria-label={`Delete tag ${t.name}`} onClick={() => setDeleting(t)}>
                Delete…
              </button>
            ) : null}
          </li>
        ))}
      </ul>
      {admin ? (
        <form
          class="row"
          onSubmit={async (e) => {
            e.preventDefault();
            setError(null);
            try {
              await post(`/v1/workspaces/${wsId}/tags`, { name, color });
              setName('');
              tags.reload();
            } catch (err) {
              setError(err);
            }
          }}
        >
          <label class="grow">
            New tag
            <input name="tag-name" required maxLength={50} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Colour
            <input type="color" name="tag-color" value={color} onInput={(e) => setColor((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit">Add tag</button>
        </form>
      ) : null}
      <Confirm
        open={deleting !== null}
        title="Delete this tag?"
        message={`“${deleting?.name ?? ''}” will be removed from every document.`}
        action="Delete tag"
        onClose={() => setDeleting(null)}
        onConfirm={async () => {
          if (deleting) await del(`/v1/workspaces/${wsId}/tags/${deleting.id}`);
          tags.reload();
        }}
      />
    </>
  );
}

/** /app/invitations/:id: the invited user accepts, then lands in the workspace. */
export function AcceptInvitation({ invitationId, onJoined }: { invitationId: string; onJoined: () => void }) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <section>
      <h1>Join a workspace</h1>
      <p>You have been invited to a workspace. Accept to join it with the account you are signed in with.</p>
      <ErrorBox error={error} />
      <button
        type="button"
        class="primary"
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          setError(null);
          try {
            const w = await post<Workspace>(`/v1/invitations/${encodeURIComponent(invitationId)}/accept`);
            onJoined();
            navigate(`/w/${w.id}/documents`);
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        Accept invitation
      </button>
    </section>
  );
}
