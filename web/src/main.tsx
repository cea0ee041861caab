import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { apiWithHeaders, get, Me, onSession, renew, sessionState, SessionState, signOut, Workspace } from './api';
import { parseWithheld, WITHHELD_HEADER, WITHHELD_REASONS_HEADER } from './withheld';
import { match, navigate, onLinkClick, useLocation } from './router';
import { ErrorBox, useLoad } from './ui';
import { SessionEnded, SignIn, SignUp } from './pages/auth';
import { WorkspaceSettings, Workspaces } from './pages/workspaces';
import { Documents } from './pages/documents';
import { DocumentView } from './pages/document';
import { Search } from './pages/search';
import { ApiKeys } from './pages/apiKeys';
import { Audit } from './pages/audit';
import { AcceptInvitation } from './pages/team';
import { SearchLinks } from './pages/searchLinks';
import { InstructionSets, InstructionSetView } from './pages/instructionSets';
import { Account } from './pages/account';
import { AcceptMailedInvitation, ForgotPassword, ResetPassword, VerifyEmail } from './pages/identity';

function useSession(): SessionState {
  const [s, setS] = useState(sessionState());
  useEffect(() => onSession(setS), []);
  return s;
}

const LAST_WS = 'kb-console-workspace';

function Shell() {
  const { path } = useLocation();
  const me = useLoad(() => get<Me>('/v1/auth/me'), []);
  // The list, and how many of the caller's workspaces it leaves out (their identity settings ask more).
  const listed = useLoad(async () => {
    const { body, headers } = await apiWithHeaders<Workspace[]>('GET', '/v1/workspaces');
    return { list: body, withheld: parseWithheld(headers.get(WITHHELD_HEADER), headers.get(WITHHELD_REASONS_HEADER)) };
  }, [path.split('/')[2] ?? '']);
  const workspaces = { data: listed.data?.list, error: listed.error, loading: listed.loading, reload: listed.reload };
  const wsId = wsOf(path)?.ws;
  useEffect(() => {
    if (wsId) localStorage.setItem(LAST_WS, wsId);
  }, [wsId]);
  const current = workspaces.data?.find((w) => w.id === wsId);

  let page;
  let m: Record<string, string> | null;
  if ((m = match('/w/:ws/documents/:doc', path))) page = <DocumentView wsId={m.ws} docId={m.doc} />;
  else if ((m = match('/w/:ws/documents', path))) page = <Documents wsId={m.ws} />;
  else if ((m = match('/w/:ws/search', path))) page = <Search wsId={m.ws} />;
  else if ((m = match('/w/:ws/audit', path))) page = <Audit wsId={m.ws} />;
  else if ((m = match('/w/:ws/links', path))) page = <SearchLinks wsId={m.ws} />;
  else if ((m = match('/w/:ws/sets/:set', path))) page = <InstructionSetView wsId={m.ws} setId={m.set} />;
  else if ((m = match('/w/:ws/sets', path))) page = <InstructionSets wsId={m.ws} />;
  else if ((m = match('/w/:ws/settings', path))) page = <WorkspaceSettings wsId={m.ws} onChanged={workspaces.reload} />;
  else if (match('/settings/api-keys', path)) page = <ApiKeys />;
  else if (match('/settings/account', path)) page = <Account />;
  else if ((m = match('/invitations/:id', path))) page = <AcceptInvitation invitationId={m.id} onJoined={workspaces.reload} />;
  else if (match('/workspaces', path) || path === '/') page = <Workspaces workspaces={workspaces} withheld={listed.data?.withheld ?? null} />;
  else page = <p>There is no page at this address. <a href="/app/workspaces">Go to your workspaces</a>.</p>;

  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/app/workspaces">
          Knowledge base
        </a>
        {workspaces.data && workspaces.data.length > 0 ? (
          <label class="switcher">
            <span class="sr-only">Workspace</span>
            <select
              aria-label="Workspace"
              value={wsId ?? ''}
              onChange={(e) => {
                const v = (e.target as HTMLSelectElement).value;
                navigate(v ? `/w/${v}/documents` : '/workspaces');
              }}
            >
              <option value="">All workspaces</option>
              {workspaces.data.map((w) => (
                <option value={w.id} key={w.id}>
                  {w.name}
                </option>
              ))}
            </select>
          </label>
        ) : null}
        <span class="spacer" />
        <a href="/app/settings/api-keys">API keys</a>
        <a href="/app/settings/account">Account</a>
        <span class="who" title={me.data?.email}>
          {me.data?.name}
        </span>
        <button type="button" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      {wsId ? (
        <nav class="tabs" aria-label="Workspace">
          <span class="ws-name">{current?.name ?? 'Workspace'}</span>
          {[
            ['documents', 'Documents'],
            ['search', 'Search'],
            ['sets', 'Instruction sets'],
            ['links', 'Search links'],
            ['audit', 'Audit trail'],
            ['settings', 'Settings'],
          ].map(([p, label]) => (
            <a key={p} href={`/app/w/${wsId}/${p}`} aria-current={path.startsWith(`/w/${wsId}/${p}`) ? 'page' : undefined}>
              {label}
            </a>
          ))}
        </nav>
      ) : null}
      <main id="main" tabIndex={-1}>
        <ErrorBox error={workspaces.error} />
        {page}
      </main>
    </div>
  );
}

/** The workspace of a /w/:ws/... path, by the router's rule for parameters (never one that matches no page: it is remembered as the next sign-in's page). */
function wsOf(path: string): { ws: string } | null {
  const parts = path.split('/').filter(Boolean);
  return parts[0] === 'w' && parts[1] && match('/w/:ws', `/w/${parts[1]}`) ? { ws: parts[1] } : null;
}

function App() {
  const session = useSession();
  const { path } = useLocation();
  useEffect(() => {
    void renew();
  }, []);
  useEffect(() => {
    if (session === 'signed-in' && (path === '/signin' || path === '/signup' || path === '/forgot-password')) {
      const last = localStorage.getItem(LAST_WS);
      navigate(last ? `/w/${last}/documents` : '/workspaces', true);
    }
  }, [session, path]);

  if (session === 'loading')
    return (
      <main id="main" class="center">
        <p role="status">Loading…</p>
      </main>
    );
  // Pages a mailed link opens, whether or not this browser is signed in.
  const signedIn = session === 'signed-in';
  if (path === '/verify-email') return <VerifyEmail signedIn={signedIn} />;
  if (path === '/reset-password') return <ResetPassword signedIn={signedIn} />;
  if (path === '/accept-invitation') return <AcceptMailedInvitation signedIn={signedIn} />;
  if (path === '/forgot-password' && !signedIn) return <ForgotPassword />;
  if (session === 'ended') return <SessionEnded />;
  if (session === 'signed-out') return path === '/signup' ? <SignUp /> : <SignIn />;
  return <Shell />;
}

document.addEventListener('click', onLinkClick);
render(<App />, document.getElementById('root') as HTMLElement);
