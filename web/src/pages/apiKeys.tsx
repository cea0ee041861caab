import { useState } from 'preact/hooks';
import { ApiKey, del, get, post } from '../api';
import { Confirm, CopyButton, ErrorBox, useLoad, when } from '../ui';
import { useSubmit } from '../useSubmit';

export function ApiKeys() {
  const keys = useLoad(() => get<{ data: ApiKey[] }>('/v1/api-keys'), []);
  const [name, setName] = useState('');
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  const { busy, error, run } = useSubmit();
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  return (
    <section>
      <h1>API keys</h1>
      <p class="muted">An API key acts as you, in every workspace you belong to. Send it as <code>Authorization: Bearer kb_…</code>.</p>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => {
            const k = await post<{ id: string; name: string; key: string }>('/v1/api-keys', { name });
            setCreated({ name: k.name, key: k.key });
            setName('');
            keys.reload();
          });
        }}
      >
        <label class="grow">
          New key name
          <input name="key-name" required maxLength={100} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="primary" disabled={busy}>
          Create key
        </button>
      </form>
      <ErrorBox error={error} />
      {created ? (
        <div class="notice" role="status">
          <p>
            <strong>Your new key “{created.name}”.</strong> Copy it now: it is shown only once and cannot be shown again.
          </p>
          <div class="row">
            <code class="secret" data-testid="new-key">
              {created.key}
            </code>
            <CopyButton text={created.key} label="Copy key" />
            <button type="button" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        </div>
      ) : null}
      <ErrorBox error={keys.error} />
      {keys.data && keys.data.data.length === 0 ? <p class="muted">No API keys yet.</p> : null}
      {keys.data && keys.data.data.length ? (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Prefix</th>
                <th scope="col" class="wide-only">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.data.data.map((k) => (
                <tr key={k.id}>
                  <td>{k.name}</td>
                  <td>
                    <code>{k.prefix}…</code>
                  </td>
                  <td class="wide-only">{when(k.createdAt)}</td>
                  <td>{k.lastUsedAt ? when(k.lastUsedAt) : 'Never'}</td>
                  <td>
                    <button type="button" class="danger" onClick={() => setRevoking(k)} aria-label={`Revoke ${k.name}`}>
                      Revoke…
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <Confirm
        open={revoking !== null}
        title="Revoke this key?"
        message={`Programs using “${revoking?.name ?? ''}” will be refused from now on.`}
        action="Revoke key"
        onClose={() => setRevoking(null)}
        onConfirm={async () => {
          if (revoking) await del(`/v1/api-keys/${revoking.id}`);
          keys.reload();
        }}
      />
    </section>
  );
}
