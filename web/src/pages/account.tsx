import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, del, get, Me, post, renew } from '../api';
import { Confirm, CopyButton, ErrorBox, useLoad, when } from '../ui';
import { actionWords } from './audit';
import { QrCode } from '../qr';
import { useSubmit } from '../useSubmit';

interface Session {
  id: string;
  device: string | null;
  createdAt: string | null;
  lastUsedAt: string | null;
  ipHash: string | null;
  expiresAt: string;
  current: boolean;
}

interface SecurityEvent {
  id: string;
  occurredAt: string;
  action: string;
  authMethod: string;
}

/** /app/settings/account: e-mail verification, second factor, sessions, and the account's security trail. */
export function Account() {
  const me = useLoad(() => get<Me>('/v1/auth/me'), []);
  // A link to a part of this page (#email, #second-factor: the workspace list's notice) scrolls to it once it is shown.
  const loaded = me.data !== undefined;
  useEffect(() => {
    if (loaded && location.hash.length > 1) document.getElementById(location.hash.slice(1))?.scrollIntoView();
  }, [loaded]);
  if (me.error) return <ErrorBox error={me.error} />;
  if (!me.data) return <p role="status">Loading…</p>;
  const m = me.data;
  return (
    <section>
      <h1>Account</h1>
      <dl class="meta">
        <dt>Name</dt>
        <dd>{m.name}</dd>
        <dt id="email">E-mail</dt>
        <dd>
          {m.email} <span class={`badge ${m.emailVerified ? 'status-verified' : 'status-pending'}`}>{m.emailVerified ? 'Confirmed' : 'Not confirmed'}</span>
        </dd>
      </dl>
      {m.emailVerified ? null : <ResendVerification />}
      <SecondFactor enabled={m.mfaEnabled === true} onChanged={me.reload} />
      <Sessions />
      <SecurityTrail />
    </section>
  );
}

function ResendVerification() {
  const [note, setNote] = useState('');
  const { busy, error, run } = useSubmit();
  return (
    <div class="row">
      <button
        type="button"
        disabled={busy}
        onClick={() => {
          setNote('');
          void run(
            async () => {
              const r = await post<{ emailVerified: boolean; sent: boolean }>('/v1/auth/resend-verification');
              setNote(r.emailVerified ? 'Your address is confirmed already.' : 'A new confirmation link is on its way: open it from your mail.');
            },
            (err) => (err instanceof ApiError && err.code === 'RATE_LIMITED' ? new Error('You asked several times within the hour: wait, then try again.') : err),
          );
        }}
      >
        Mail the confirmation link again
      </button>
      {note ? <span role="status">{note}</span> : null}
      <ErrorBox error={error} />
    </div>
  );
}

/** TOTP: enrol (the secret shown once), confirm with a code (recovery codes shown once), disable with a code. */
function SecondFactor({ enabled, onChanged }: { enabled: boolean; onChanged: () => void }) {
  const [enrolment, setEnrolment] = useState<{ otpauthUri: string; secret: string } | null>(null);
  const [recovery, setRecovery] = useState<string[] | null>(null);
  const [code, setCode] = useState('');
  const { busy, error, run } = useSubmit();
  return (
    <>
      <h2 id="second-factor">Second factor</h2>
      {recovery ? (
        <div class="notice" role="status">
          <p>
            <strong>Two-step sign-in is on.</strong> Keep these recovery codes somewhere safe: each signs you in once if you lose your authenticator. They are shown only now.
          </p>
          <pre class="secret" data-testid="recovery-codes">
            {recovery.join('\n')}
          </pre>
          <CopyButton text={recovery.join('\n')} label="Copy recovery codes" />
        </div>
      ) : null}
      {enabled ? (
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            void run(async () => {
              await post('/v1/auth/mfa/totp/disable', { code: code.trim() });
              setCode('');
              setRecovery(null);
              onChanged();
            });
          }}
        >
          <p class="grow">
            Two-step sign-in is <strong>on</strong>: signing in asks for a code from your authenticator app.
          </p>
          <label>
            Code to turn it off
            <input name="disable-code" inputMode="numeric" autoComplete="one-time-code" required maxLength={64} value={code} onInput={(e) => setCode((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit" class="danger" disabled={busy}>
            Turn off
          </button>
        </form>
      ) : enrolment ? (
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            void run(async () => {
              const r = await post<{ recoveryCodes: string[] }>('/v1/auth/mfa/totp/confirm', { code: code.trim() });
              setRecovery(r.recoveryCodes);
              setEnrolment(null);
              setCode('');
              onChanged();
            });
          }}
        >
          <p>Add this account to your authenticator app (shown once): scan the code, open the link on a phone with the app, or type the secret in.</p>
          <QrCode text={enrolment.otpauthUri} label="QR code of the set-up link, for an authenticator app" />
          <div class="row">
            <a class="secret" href={enrolment.otpauthUri} data-testid="otpauth-uri">
              {enrolment.otpauthUri}
            </a>
            <CopyButton text={enrolment.otpauthUri} label="Copy link" />
          </div>
          <div class="row">
            <code class="secret" data-testid="totp-secret">
              {enrolment.secret}
            </code>
            <CopyButton text={enrolment.secret} label="Copy secret" />
          </div>
          <label>
            Code from the app
            <input name="confirm-code" inputMode="numeric" autoComplete="one-time-code" required maxLength={64} value={code} onInput={(e) => setCode((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit" class="primary" disabled={busy}>
            Confirm and turn on
          </button>
        </form>
      ) : (
        <div class="row">
          <p class="grow">Two-step sign-in is off.</p>
          <button type="button" class="primary" disabled={busy} onClick={() => void run(async () => setEnrolment(await post<{ otpauthUri: string; secret: string }>('/v1/auth/mfa/totp')))}>
            Set up two-step sign-in
          </button>
        </div>
      )}
      <ErrorBox error={error} />
    </>
  );
}

function Sessions() {
  const sessions = useLoad(() => get<{ data: Session[] }>('/v1/auth/sessions'), []);
  const [revoking, setRevoking] = useState<Session | null>(null);
  const [others, setOthers] = useState(false);
  const [note, setNote] = useState('');
  const list = sessions.data?.data ?? [];
  return (
    <>
      <h2>Sessions</h2>
      <ErrorBox error={sessions.error} />
      <div class="table-wrap">
        <table class="sessions">
          <thead>
            <tr>
              <th scope="col">Device</th>
              <th scope="col">Signed in</th>
              <th scope="col" class="wide-only">
                Last renewed
              </th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((s) => (
              <tr key={s.id} data-session={s.id}>
                <td>
                  {s.device ?? 'Unknown device'}
                  {s.current ? (
                    <>
                      <br />
                      <span class="badge status-verified">This browser</span>
                    </>
                  ) : null}
                </td>
                <td>{s.createdAt ? when(s.createdAt) : '—'}</td>
                <td class="wide-only">{s.lastUsedAt ? when(s.lastUsedAt) : '—'}</td>
                <td>
                  {s.current ? null : (
                    <button type="button" class="danger" aria-label={`Sign out the session on ${s.device ?? 'an unknown device'} from ${s.createdAt ? when(s.createdAt) : 'an unknown time'}`} onClick={() => setRevoking(s)}>
                      Sign out…
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {list.filter((s) => !s.current).length > 0 ? (
        <button type="button" class="danger" onClick={() => setOthers(true)}>
          Sign out every other session…
        </button>
      ) : null}
      {note ? <p role="status">{note}</p> : null}
      <Confirm
        open={revoking !== null}
        title="Sign out this session?"
        message={`The browser or app of that session (${revoking?.device ?? 'unknown device'}) has to sign in again.`}
        action="Sign out session"
        onClose={() => setRevoking(null)}
        onConfirm={async () => {
          if (revoking) await del(`/v1/auth/sessions/${revoking.id}`);
          setNote('Session signed out.');
          sessions.reload();
        }}
      />
      <Confirm
        open={others}
        title="Sign out every other session?"
        message="Every other browser and app signed in to your account has to sign in again. This one stays signed in."
        action="Sign out others"
        onClose={() => setOthers(false)}
        onConfirm={async () => {
          const r = await revokeOtherSessions();
          setNote(`${r.revoked} session${r.revoked === 1 ? '' : 's'} signed out.`);
          // This tab's own refresh cookie is untouched; renew to be sure it still works.
          await renew();
          sessions.reload();
        }}
      />
    </>
  );
}

const revokeOtherSessions = () => api<{ revoked: number }>('DELETE', '/v1/auth/sessions');

function SecurityTrail() {
  const trail = useLoad(() => get<{ data: SecurityEvent[] }>('/v1/auth/security-events'), []);
  return (
    <details>
      <summary>Security events of your account</summary>
      <ErrorBox error={trail.error} />
      <ul class="trail">
        {trail.data?.data.slice(0, 50).map((e) => (
          <li key={e.id}>
            {when(e.occurredAt)} — {actionWords(e.action)} <span class="muted small">via {e.authMethod}</span>
          </li>
        ))}
      </ul>
    </details>
  );
}
