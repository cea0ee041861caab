import { useState } from 'preact/hooks';
import { anonymous, ApiError, signIn, signInWithCode, signUp } from '../api';
import { navigate, useLocation } from '../router';
import { ErrorBox, useLoad } from '../ui';
import { useSubmit } from '../useSubmit';

export interface SignInOptions {
  registration: boolean;
  sso: boolean;
}

/** How one signs in here (registration open, single sign-on configured); both assumed off until known. */
export function useSignInOptions() {
  return useLoad(() => anonymous<SignInOptions>('GET', '/v1/auth/options'), []);
}

const SSO_ERRORS: Record<string, string> = {
  SSO_DOMAIN_NOT_ALLOWED: 'Single sign-on refused: accounts of your organisation cannot sign in here.',
  SSO_ACCOUNT_MISMATCH: 'Single sign-on refused: this address is linked to another identity at your provider.',
  SSO_FAILED: 'Single sign-on failed: the provider did not confirm the sign-in. Try again.',
  SSO_NOT_CONFIGURED: 'Single sign-on is not configured on this server.',
};

/** The second step when the account has a second factor: a code from the authenticator app or a recovery code. */
function CodeForm({ challenge, onRestart }: { challenge: string; onRestart: () => void }) {
  const [code, setCode] = useState('');
  const { busy, error, run } = useSubmit();
  return (
    <form
      class="stack"
      aria-label="Second factor"
      onSubmit={(e) => {
        e.preventDefault();
        void run(
          () => signInWithCode(challenge, code.trim()),
          (err) => {
            // An expired or exhausted challenge: start again with the password.
            if (err instanceof ApiError && (err.code === 'UNAUTHORIZED' || err.code === 'RATE_LIMITED')) onRestart();
            return err;
          },
        );
      }}
    >
      <p>Your account has a second factor. Enter the 6-digit code from your authenticator app, or one of your recovery codes.</p>
      <label>
        Code
        <input name="code" inputMode="numeric" autoComplete="one-time-code" required maxLength={64} value={code} onInput={(e) => setCode((e.target as HTMLInputElement).value)} />
      </label>
      <ErrorBox error={error} />
      <button type="submit" class="primary" disabled={busy}>
        {busy ? 'Checking…' : 'Verify code'}
      </button>
    </form>
  );
}

/**
 * The challenge a single sign-on brought back for an account with a second factor
 * (`/app/signin#mfaChallenge=…`), taken once: the fragment is cleared from the address bar.
 */
function takeSsoChallenge(): string | null {
  const m = /^#mfaChallenge=([^&]+)$/.exec(window.location.hash);
  if (!m) return null;
  history.replaceState(history.state, '', window.location.pathname + window.location.search);
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return null;
  }
}

function SignInForm({ submitLabel = 'Sign in' }: { submitLabel?: string }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const { busy, error, run } = useSubmit();
  const [challenge, setChallenge] = useState<string | null>(takeSsoChallenge);
  if (challenge) return <CodeForm challenge={challenge} onRestart={() => setChallenge(null)} />;
  return (
    <form
      class="stack"
      onSubmit={(e) => {
        e.preventDefault();
        void run(
          () => signIn(email, password),
          (err) => {
            // A second factor is enrolled: the code form comes next, no error.
            const c = err instanceof ApiError && err.code === 'MFA_REQUIRED' ? err.details?.challenge : undefined;
            if (typeof c !== 'string') return err;
            setChallenge(c);
            return null;
          },
        );
      }}
    >
      <label>
        Email
        <input type="email" name="email" autoComplete="username" required value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
      </label>
      <label>
        Password
        <input type="password" name="password" autoComplete="current-password" required value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
      </label>
      <ErrorBox error={error} />
      <button type="submit" class="primary" disabled={busy}>
        {busy ? 'Signing in…' : submitLabel}
      </button>
    </form>
  );
}

export function SignIn() {
  const { query } = useLocation();
  const options = useSignInOptions();
  const ssoError = query.get('ssoError');
  return (
    <main id="main" class="auth">
      <h1>Sign in</h1>
      <p class="muted">to the knowledge base console</p>
      {ssoError ? (
        <p class="error" role="alert">
          {SSO_ERRORS[ssoError] ?? 'Single sign-on failed.'}
        </p>
      ) : null}
      <SignInForm />
      <p>
        <a href="/app/forgot-password">Forgot your password?</a>
      </p>
      {options.data?.sso ? (
        <p>
          {/* A full navigation (not the client router): the provider's pages come next. */}
          <a class="button" href="/v1/auth/console/sso">
            Sign in with SSO
          </a>
        </p>
      ) : null}
      {options.data?.registration !== false ? (
        <p>
          No account?{' '}
          <a
            href="/app/signup"
            onClick={(e) => {
              e.preventDefault();
              navigate('/signup');
            }}
          >
            Create one
          </a>
        </p>
      ) : null}
    </main>
  );
}

export function SignUp() {
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const { busy, error, run } = useSubmit();
  return (
    <main id="main" class="auth">
      <h1>Create an account</h1>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => {
            await signUp(name, email, password);
            navigate('/workspaces', true);
          });
        }}
      >
        <label>
          Name
          <input name="name" autoComplete="name" required maxLength={200} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Email
          <input type="email" name="email" autoComplete="email" required value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Password <span class="muted">(8 characters or more)</span>
          <input type="password" name="password" autoComplete="new-password" required minLength={8} value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
        </label>
        <ErrorBox error={error} />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create account'}
        </button>
      </form>
      <p>
        Already registered?{' '}
        <a
          href="/app/signin"
          onClick={(e) => {
            e.preventDefault();
            navigate('/signin');
          }}
        >
          Sign in
        </a>
      </p>
    </main>
  );
}

/** The session could not be renewed (expired, revoked, signed out elsewhere). */
export function SessionEnded() {
  return (
    <main id="main" class="auth">
      <h1>Your session has ended</h1>
      <p role="alert">
        The console could not renew your session: it expired, was revoked, or you signed out in another tab. Sign in again to carry on where you were.
      </p>
      <SignInForm submitLabel="Sign in again" />
    </main>
  );
}
