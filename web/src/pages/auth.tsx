import { useState } from 'preact/hooks';
import { signIn, signUp } from '../api';
import { navigate } from '../router';
import { ErrorBox } from '../ui';

function SignInForm({ submitLabel = 'Sign in' }: { submitLabel?: string }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="stack"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(null);
        try {
          await signIn(email, password);
        } catch (err) {
          setError(err);
        } finally {
          setBusy(false);
        }
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
  return (
    <main id="main" class="auth">
      <h1>Sign in</h1>
      <p class="muted">to the knowledge base console</p>
      <SignInForm />
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
    </main>
  );
}

export function SignUp() {
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <main id="main" class="auth">
      <h1>Create an account</h1>
      <form
        class="stack"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(null);
          try {
            await signUp(name, email, password);
            navigate('/workspaces', true);
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
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
