import { useEffect, useState } from 'preact/hooks';
import { anonymous, ApiError, signIn } from '../api';
import { navigate, useLocation } from '../router';
import { ErrorBox } from '../ui';
import { useSubmit } from '../useSubmit';

/** Pages a mailed link opens (KB_APP_URL/verify-email, /reset-password, /accept-invitation redirect here), signed in or not. */

function Back({ signedIn }: { signedIn: boolean }) {
  return <p>{signedIn ? <a href="/app/workspaces">Go to your workspaces</a> : <a href="/app/signin">Go to sign in</a>}</p>;
}

/** /app/verify-email?token=…: confirms the address once, on load. */
export function VerifyEmail({ signedIn }: { signedIn: boolean }) {
  const { query } = useLocation();
  const token = query.get('token') ?? '';
  const [state, setState] = useState<'working' | 'done' | 'failed'>('working');
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    if (!token) {
      setState('failed');
      setError(new Error('This link has no token: open the link from the mail again.'));
      return;
    }
    anonymous('POST', '/v1/auth/verify-email', { token })
      .then(() => setState('done'))
      .catch((err: unknown) => {
        setState('failed');
        setError(
          err instanceof ApiError && err.code === 'EXPIRED'
            ? new Error('This link has expired. Sign in and ask for a new one under Account.')
            : err instanceof ApiError && err.code === 'INVALID_TOKEN'
              ? new Error('This link is not valid, or was used already.')
              : err,
        );
      });
  }, [token]);
  return (
    <main id="main" class="auth">
      <h1>Confirm your e-mail address</h1>
      {state === 'working' ? <p role="status">Confirming…</p> : null}
      {state === 'done' ? (
        <p role="status" class="notice">
          Your e-mail address is confirmed.
        </p>
      ) : null}
      <ErrorBox error={error} />
      <Back signedIn={signedIn} />
    </main>
  );
}

/** /app/forgot-password: asks for a reset link (the same answer whether or not the address has an account). */
export function ForgotPassword() {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState('');
  const { busy, error, run } = useSubmit();
  return (
    <main id="main" class="auth">
      <h1>Forgot your password?</h1>
      <p class="muted">We mail a link to choose a new one. It works once, for 30 minutes.</p>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => {
            const r = await anonymous<{ message: string }>('POST', '/v1/auth/forgot-password', { email });
            setSent(r.message);
          });
        }}
      >
        <label>
          Email
          <input type="email" name="email" autoComplete="username" required value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
        </label>
        <ErrorBox error={error} />
        <button type="submit" class="primary" disabled={busy}>
          Mail me a link
        </button>
      </form>
      {sent ? (
        <p role="status" class="notice">
          {sent}
        </p>
      ) : null}
      <Back signedIn={false} />
    </main>
  );
}

/** /app/reset-password?token=…: a new password; every session of the account ends. */
export function ResetPassword({ signedIn }: { signedIn: boolean }) {
  const { query } = useLocation();
  const token = query.get('token') ?? '';
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const [done, setDone] = useState(false);
  const { busy, error, run, fail } = useSubmit();
  return (
    <main id="main" class="auth">
      <h1>Choose a new password</h1>
      {done ? (
        <>
          <p role="status" class="notice">
            Your password is changed, and every session of your account has been signed out.
          </p>
          <p>
            <a href="/app/signin">Sign in with the new password</a>
          </p>
        </>
      ) : (
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            if (password !== again) return fail(new Error('The two passwords differ.'));
            void run(
              async () => {
                await anonymous('POST', '/v1/auth/reset-password', { token, password });
                setDone(true);
              },
              (err) =>
                err instanceof ApiError && (err.code === 'INVALID_TOKEN' || err.code === 'EXPIRED')
                  ? new Error('This link is not valid any more (used, replaced by a newer one, or older than 30 minutes). Ask for a new one.')
                  : err,
            );
          }}
        >
          {!token ? <p class="error">This link has no token: open the link from the mail again.</p> : null}
          <label>
            New password <span class="muted">(8 characters or more)</span>
            <input type="password" name="new-password" autoComplete="new-password" required minLength={8} value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            The same again
            <input type="password" name="new-password-again" autoComplete="new-password" required minLength={8} value={again} onInput={(e) => setAgain((e.target as HTMLInputElement).value)} />
          </label>
          <ErrorBox error={error} />
          <button type="submit" class="primary" disabled={busy || !token}>
            Change password
          </button>
          <p>
            <a href="/app/forgot-password">Ask for a new link</a>
          </p>
        </form>
      )}
      {signedIn && !done ? <Back signedIn /> : null}
    </main>
  );
}

/**
 * /app/accept-invitation?token=…: the mailed invitation. Someone without an account chooses a
 * name and password (account, membership and session in one request); an address that has an
 * account is sent to sign in and accept at /app/invitations/:id.
 */
export function AcceptMailedInvitation({ signedIn }: { signedIn: boolean }) {
  const { query } = useLocation();
  const token = query.get('token') ?? '';
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const { busy, error, run } = useSubmit();
  const [existing, setExisting] = useState<string | null>(null);
  // The token is <workspaceId>.<invitationId>.<mac>: an account holder accepts by the invitation id, signed in.
  const invitationId = /^[0-9a-f-]{36}\.([0-9a-f-]{36})\./i.exec(token)?.[1] ?? null;
  if (signedIn && invitationId) {
    return (
      <main id="main" class="auth">
        <h1>Join a workspace</h1>
        <p>You are signed in. Accept the invitation with this account (its address must be the one invited).</p>
        <p>
          <a class="button primary" href={`/app/invitations/${invitationId}`}>
            Continue
          </a>
        </p>
      </main>
    );
  }
  return (
    <main id="main" class="auth">
      <h1>Join a workspace</h1>
      {existing ? (
        <p class="notice" role="status">
          An account with the invited address exists already. <a href={`/app/signin`}>Sign in</a>, then open <a href={`/app/invitations/${existing}`}>the invitation</a> to accept it.
        </p>
      ) : (
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            void run(
              async () => {
                const r = await anonymous<{ user: { email: string }; workspaceId: string }>('POST', '/v1/auth/accept-invitation', { token, name, password });
                // The console's own session (cookie), with the password just chosen.
                await signIn(r.user.email, password);
                navigate(`/w/${r.workspaceId}/documents`, true);
              },
              (err) => {
                // The invited address has an account: sign in and accept there, no error.
                if (err instanceof ApiError && err.code === 'EMAIL_TAKEN' && typeof err.details?.invitationId === 'string') {
                  setExisting(err.details.invitationId);
                  return null;
                }
                return err instanceof ApiError && err.code === 'INVITATION_NOT_FOUND'
                  ? new Error('This invitation is no longer valid: it was revoked, or accepted already.')
                  : err instanceof ApiError && err.code === 'INVITATION_EXPIRED'
                    ? new Error('This invitation has expired: ask for a new one.')
                    : err;
              },
            );
          }}
        >
          <p>You have been invited to a workspace. Choose your name and a password to create your account and join it.</p>
          <label>
            Name
            <input name="name" autoComplete="name" required maxLength={200} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Password <span class="muted">(8 characters or more)</span>
            <input type="password" name="password" autoComplete="new-password" required minLength={8} value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
          </label>
          <ErrorBox error={error} />
          <button type="submit" class="primary" disabled={busy || !token}>
            Create account and join
          </button>
          <p>
            Have an account? <a href="/app/signin">Sign in</a> first, then open the link again.
          </p>
        </form>
      )}
    </main>
  );
}
