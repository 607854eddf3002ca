import { render, type VNode } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiFailure, whenSignedOut } from './api.ts';
import { begin, finish, isCallback } from './oidc.ts';
import { INVITATION_STORE, invitationIn, manages } from './organization.ts';
import { ErrorBox, Field, go, submitting, useAction, type Me } from './ui.tsx';
import { AuditLogPage } from './views/audit-log.tsx';
import { ConversationPage } from './views/conversation.tsx';
import { ConversationsPage } from './views/conversations.tsx';
import { NewConversationPage } from './views/new-conversation.tsx';
import { JoinPage } from './views/join.tsx';
import { KeysPage } from './views/keys.tsx';
import { OrganizationPage } from './views/organization.tsx';
import { SandboxesPage } from './views/sandboxes.tsx';
import { SpecsPage } from './views/specs.tsx';
import { SettingsPage } from './views/settings.tsx';
import { UsagePage } from './views/usage.tsx';

/** The page's location: the part of the URL after `#`, so `/` is the only path the server serves. */
function useRoute(): string[] {
  const read = () => location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

/**
 * An invitation link (`/?invitation=<token>`): the token leaves the address bar (and so the history) at
 * once, before anything else runs, and waits in this tab's sessionStorage, across an OpenID sign-in
 * (which leaves for the issuer and comes back), until it is accepted or set aside (views/join.tsx).
 */
const arrival = invitationIn(location.href);
if (arrival.found) {
  history.replaceState(history.state, '', arrival.rest);
  if (arrival.token) sessionStorage.setItem(INVITATION_STORE, arrival.token);
}
const badInvitationLink = arrival.found && !arrival.token;
const BAD_LINK = 'That invitation link is not complete: copy the whole link and open it again.';

function SignIn(props: { onSignedIn: () => void; notice: string | null; invited: boolean }) {
  // The key lives only in this input until the request is sent; it is cleared either way.
  const [key, setKey] = useState('');
  const action = useAction(async () => {
    const k = key.trim();
    setKey('');
    await api('POST', '/api/authenticate', undefined, { 'x-session-api-key': k });
    props.onSignedIn();
  });
  const openid = useAction(begin);
  const error =
    action.error instanceof ApiFailure && action.error.status === 401
      ? new Error('That key was not accepted.')
      : action.error;
  return (
    <main class="signin">
      <h1>Agent Conversation Service</h1>
      <section aria-label="Sign in with OpenID">
        <p>Sign in with your account at this service's identity provider.</p>
        {props.notice && <p class="notice">{props.notice}</p>}
        {props.invited && (
          <p class="notice" role="status">
            You were invited to join an organization. Sign in with the email address the invitation was sent to, then
            accept it.
          </p>
        )}
        {openid.error ? (
          <p class="error" role="alert">
            {String((openid.error as Error).message)}
          </p>
        ) : null}
        <button type="button" disabled={openid.busy} onClick={() => void openid.call()}>
          Sign in with OpenID
        </button>
        <p class="hint">
          Running locally? <code>npm start</code> runs a development provider: any email, and the password it prints.
        </p>
      </section>
      <form onSubmit={submitting(action.call)}>
        <p>Or paste an API key to sign in. It is exchanged for a session cookie and not kept by this page.</p>
        <Field id="api-key" label="API key" error={error ? String((error as Error).message) : undefined}>
          <input
            id="api-key"
            type="password"
            autocomplete="off"
            spellcheck={false}
            required
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" disabled={action.busy || !key.trim()}>
          Sign in with key
        </button>
        <p class="hint">
          Running locally? <code>npm start</code> prints a development key (also in <code>.data/dev-api-key</code>).
        </p>
      </form>
    </main>
  );
}

const NAV: [string, string][] = [
  ['conversations', 'Conversations'],
  ['sandboxes', 'Sandboxes'],
  ['specs', 'Sandbox specs'],
  ['settings', 'Settings'],
  ['keys', 'API keys'],
  ['usage', 'Usage'],
  ['organization', 'Organization'],
];
/** Only for owners and admins (the API refuses members too). */
const MANAGER_NAV: [string, string][] = [['audit', 'Audit log']];

function App() {
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [notice, setNotice] = useState<string | null>(badInvitationLink ? BAD_LINK : null);
  const [loadError, setLoadError] = useState<unknown>(null);
  /** A pending invitation's token (see `arrival`), and what became of the last one. */
  const [invitation, setInvitation] = useState(() => sessionStorage.getItem(INVITATION_STORE));
  const [banner, setBanner] = useState<string | null>(badInvitationLink ? BAD_LINK : null);
  const route = useRoute();
  const loadMe = () =>
    api<Me>('GET', '/api/v1/users/me').then(
      (m) => {
        setMe(m);
        setLoadError(null);
      },
      (e: unknown) => {
        if (e instanceof ApiFailure && (e.status === 401 || e.status === 403)) setMe(null);
        else setLoadError(e);
      },
    );
  useEffect(() => {
    whenSignedOut(() => {
      setMe(null);
      setBanner(null);
      setNotice('Your session ended. Sign in again.');
    });
    // Back from the issuer: complete the sign-in, then load the person.
    if (isCallback()) {
      finish().then(
        () => void loadMe(),
        (e: unknown) => {
          setNotice(e instanceof Error ? e.message : String(e));
          setMe(null);
        },
      );
      return;
    }
    // The page says whether the request carried a session cookie: without one, nobody signed in, and asking
    // the API would only fail (a 401 in the browser's console, "session ended" to a first-time visitor).
    if (document.documentElement.hasAttribute('data-session')) void loadMe();
    else setMe(null);
  }, []);
  const signOut = async () => {
    await api('POST', '/api/logout').catch(() => undefined);
    setNotice('Signed out.');
    // What the page said to this person is not for the next one signing in here.
    setBanner(null);
    setMe(null);
  };
  if (loadError) return <ErrorBox error={loadError} />;
  if (me === undefined) return <p class="loading">Loading…</p>;
  if (me === null)
    return (
      <SignIn
        notice={notice}
        invited={!!invitation}
        onSignedIn={() => {
          setNotice(null);
          void loadMe();
        }}
      />
    );
  const [section = 'conversations', id] = route;
  let page: VNode;
  if (invitation)
    page = (
      <JoinPage
        token={invitation}
        me={me}
        onDone={(message, joined) => {
          sessionStorage.removeItem(INVITATION_STORE);
          setInvitation(null);
          setBanner(message);
          // Joined: the person's organization and role changed.
          if (joined) {
            void loadMe();
            go('organization');
          }
        }}
      />
    );
  else if (section === 'conversations' && id === 'new') page = <NewConversationPage />;
  else if (section === 'conversations' && id) page = <ConversationPage id={id} me={me} />;
  else if (section === 'sandboxes') page = <SandboxesPage />;
  else if (section === 'specs') page = <SpecsPage />;
  else if (section === 'settings') page = <SettingsPage onSaved={() => void loadMe()} />;
  else if (section === 'keys') page = <KeysPage />;
  // Keyed by its range: a new `#/usage/<from>/<to>` starts the page over with that range.
  else if (section === 'usage') page = <UsagePage key={route.join('/')} from={id} to={route[2]} />;
  // Keyed by the organization and role: a join or a role change starts the page over.
  else if (section === 'organization')
    page = <OrganizationPage key={`${me.org_id}/${me.role}`} me={me} onLeft={() => void loadMe()} />;
  else if (section === 'audit') page = <AuditLogPage key={`${me.org_id}/${me.role}`} me={me} />;
  else page = <ConversationsPage />;
  return (
    <>
      <header class="top">
        <a class="brand" href="#/conversations">
          Agent Conversation Service
        </a>
        <nav aria-label="Main">
          {[...NAV, ...(manages(me.role) ? MANAGER_NAV : [])].map(([path, label]) => (
            <a href={`#/${path}`} aria-current={section === path ? 'page' : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <span class="user" title="Signed in as">
          {me.email ?? me.id}
        </span>
        <button type="button" class="secondary" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <main id="main">
        {banner && (
          <div class="banner" role="status">
            <span>{banner}</span>
            <button type="button" class="secondary small" onClick={() => setBanner(null)}>
              Dismiss
            </button>
          </div>
        )}
        {page}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
