import { useState } from 'preact/hooks';
import { ApiError, del, get, patch, post, put, Role, Tag, Workspace } from '../api';
import { navigate } from '../router';
import { Confirm, CopyButton, ErrorBox, useLoad, when } from '../ui';
import { useSubmit } from '../useSubmit';

const ROLES: Role[] = ['OWNER', 'ADMIN', 'MEMBER'];
const roleWord = (r: string) => ({ OWNER: 'Owner', ADMIN: 'Admin', MEMBER: 'Member' })[r] ?? r;

interface Member {
  userId: string;
  email: string;
  name: string;
  role: Role;
  joinedAt: string;
}

interface Invitation {
  id: string;
  email: string;
  role: Role;
  createdAt: string;
  expiresAt: string;
  status: 'PENDING' | 'EXPIRED';
}

/**
 * Members with their roles (change, remove, transfer ownership), invitations by e-mail with a
 * link to accept, and the pending ones (revoke).
 */
export function Members({ wsId, myRole, myId, onRoleChanged }: { wsId: string; myRole: Role; myId?: string; onRoleChanged: () => void }) {
  const members = useLoad(() => get<Member[]>(`/v1/workspaces/${wsId}/members`), [wsId]);
  const [transferring, setTransferring] = useState<Member | null>(null);
  const [invitationsVersion, setInvitationsVersion] = useState(0);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('MEMBER');
  const [invite, setInvite] = useState<{ email: string; link: string; expiresAt: string } | null>(null);
  const { busy, error, run } = useSubmit();
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
                      onChange={(e) => {
                        const role = (e.target as HTMLSelectElement).value;
                        void run(() => patch(`/v1/workspaces/${wsId}/members/${m.userId}`, { role })).then(() => members.reload());
                      }}
                    >
                      {/* Only an owner may grant OWNER (an admin's choice of it would be refused). */}
                      {ROLES.filter((r) => r !== 'OWNER' || myRole === 'OWNER').map((r) => (
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
                  <div class="member-actions">
                    {myRole === 'OWNER' && m.userId !== myId ? (
                      <button type="button" aria-label={`Transfer ownership to ${m.name}`} onClick={() => setTransferring(m)}>
                        Make owner…
                      </button>
                    ) : null}
                    {admin && m.role !== 'OWNER' ? (
                      <button type="button" class="danger" aria-label={`Remove ${m.name}`} onClick={() => setRemoving(m)}>
                        Remove…
                      </button>
                    ) : null}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {admin ? (
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            void run(async () => {
              const inv = await post<{ invitationId: string; email: string; expiresAt: string }>(`/v1/workspaces/${wsId}/invite`, { email, role });
              setInvite({ email: inv.email, link: `${location.origin}/app/invitations/${inv.invitationId}`, expiresAt: inv.expiresAt });
              setEmail('');
              setInvitationsVersion((n) => n + 1);
            });
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
          <button type="submit" disabled={busy}>
            Send invitation
          </button>
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
      {admin ? <PendingInvitations wsId={wsId} version={invitationsVersion} /> : null}
      <Confirm
        open={transferring !== null}
        title="Transfer ownership?"
        message={`${transferring?.name ?? ''} (${transferring?.email ?? ''}) becomes the owner of this workspace and you become an admin. Only an owner can give it back.`}
        action="Transfer ownership"
        onClose={() => setTransferring(null)}
        onConfirm={async () => {
          if (transferring) await post(`/v1/workspaces/${wsId}/transfer-ownership`, { userId: transferring.userId });
          members.reload();
          onRoleChanged();
        }}
      />
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

/** Invitations not accepted yet (pending or expired), newest first, each with Revoke. */
function PendingInvitations({ wsId, version }: { wsId: string; version: number }) {
  const list = useLoad(() => get<{ data: Invitation[]; total: number }>(`/v1/workspaces/${wsId}/invitations`), [wsId, version]);
  const [revoking, setRevoking] = useState<Invitation | null>(null);
  return (
    <>
      <h3 id="pending-invitations">Pending invitations</h3>
      <ErrorBox error={list.error} />
      {list.data && list.data.data.length === 0 ? <p class="muted">No invitation is waiting to be accepted.</p> : null}
      {list.data && list.data.data.length > 0 ? (
        <div class="table-wrap">
          <table class="invitations" aria-labelledby="pending-invitations">
            <thead>
              <tr>
                <th scope="col">E-mail and role</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((i) => (
                <tr key={i.id} data-invitation={i.id}>
                  <td class="break">
                    {i.email}
                    <br />
                    <span class="muted small">as {roleWord(i.role)}</span>
                  </td>
                  <td>
                    <span class={`badge ${i.status === 'EXPIRED' ? 'status-failed' : 'status-pending'}`}>{i.status === 'EXPIRED' ? 'Expired' : 'Pending'}</span>
                    <br />
                    <span class="muted small">
                      {i.status === 'EXPIRED' ? 'expired' : 'until'} {when(i.expiresAt)}
                    </span>
                  </td>
                  <td>
                    <button type="button" class="danger" aria-label={`Revoke the invitation of ${i.email}`} onClick={() => setRevoking(i)}>
                      Revoke…
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {list.data && list.data.total > list.data.data.length ? <p class="muted small">Showing the newest {list.data.data.length} of {list.data.total}.</p> : null}
      <Confirm
        open={revoking !== null}
        title="Revoke this invitation?"
        message={`The link sent to ${revoking?.email ?? ''} stops working. You can invite them again later.`}
        action="Revoke invitation"
        onClose={() => setRevoking(null)}
        onConfirm={async () => {
          if (revoking) await del(`/v1/workspaces/${wsId}/invitations/${revoking.id}`);
          list.reload();
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
  const { busy, error, run } = useSubmit();
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
                onChange={(e) => {
                  const name = (e.target as HTMLInputElement).value;
                  void run(() => put(`/v1/workspaces/${wsId}/tags/${t.id}`, { name })).then(() => tags.reload());
                }}
              />
            </label>
            <input
              type="color"
              value={t.color}
              disabled={!admin}
              aria-label={`Colour of tag ${t.name}`}
              onChange={(e) => {
                const color = (e.target as HTMLInputElement).value;
                void run(() => put(`/v1/workspaces/${wsId}/tags/${t.id}`, { color })).then(() => tags.reload());
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
          onSubmit={(e) => {
            e.preventDefault();
            void run(async () => {
              await post(`/v1/workspaces/${wsId}/tags`, { name, color });
              setName('');
              tags.reload();
            });
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
          <button type="submit" disabled={busy}>
            Add tag
          </button>
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
  const { busy, error, run } = useSubmit();
  return (
    <section>
      <h1>Join a workspace</h1>
      <p>You have been invited to a workspace. Accept to join it with the account you are signed in with.</p>
      <ErrorBox error={error} />
      {/* An invitation is accepted from a confirmed address only: where to confirm it. */}
      {error instanceof ApiError && error.code === 'EMAIL_NOT_VERIFIED' ? (
        <p>
          <a href="/app/settings/account#email">Confirm your address in your account</a>, then accept again.
        </p>
      ) : null}
      <button
        type="button"
        class="primary"
        disabled={busy}
        onClick={() =>
          void run(async () => {
            const w = await post<Workspace>(`/v1/invitations/${encodeURIComponent(invitationId)}/accept`);
            onJoined();
            navigate(`/w/${w.id}/documents`);
          })
        }
      >
        Accept invitation
      </button>
    </section>
  );
}
