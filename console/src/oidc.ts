import { api, ApiFailure } from './api.ts';
import type { Answer } from '../../shared/client/index.ts';

/**
 * Sign-in with the configured OpenID issuer: authorization code + PKCE, a public client (no secret
 * in the page). `begin` asks `POST /api/auth/oidc/start` for the issuer's endpoints, the client id
 * and a nonce (bound to this browser by an HttpOnly cookie), keeps a random `state` and the PKCE
 * verifier in sessionStorage (this tab only) and goes to the issuer. Back at `/auth/callback`,
 * `finish` checks `state` against the stored one (a response this tab did not ask for is refused),
 * redeems the code at the token endpoint with the verifier, and posts the ID token to
 * `POST /api/auth/oidc/session`, which checks its nonce against the cookie and sets the session
 * cookie. The tokens are dropped: the page keeps nothing but the cookie it cannot read.
 */
const STORE = 'acs-oidc-pending';

interface Pending {
  state: string;
  verifier: string;
  token_endpoint: string;
  redirect_uri: string;
  client_id: string;
}

/** What the service says about its issuer (the typed client's type, generated from the OpenAPI document). */
type Start = Answer<'/api/auth/oidc/start', 'post'>;

const random = () => {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return base64url(bytes);
};
const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

/** Sends the person to the issuer's sign-in page. */
export async function begin(): Promise<void> {
  let start: Start;
  try {
    start = await api<Start>('POST', '/api/auth/oidc/start');
  } catch (err) {
    if (err instanceof ApiFailure && err.status === 404)
      throw new Error('Sign-in with OpenID is not configured on this service: use an API key.');
    throw err;
  }
  const verifier = random();
  const challenge = base64url(
    new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))),
  );
  const pending: Pending = {
    state: random(),
    verifier,
    token_endpoint: start.token_endpoint,
    redirect_uri: start.redirect_uri,
    client_id: start.client_id,
  };
  sessionStorage.setItem(STORE, JSON.stringify(pending));
  const url = new URL(start.authorization_endpoint);
  url.search = new URLSearchParams({
    ...Object.fromEntries(url.searchParams),
    response_type: 'code',
    client_id: start.client_id,
    redirect_uri: start.redirect_uri,
    scope: 'openid email',
    state: pending.state,
    nonce: start.nonce,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url.href);
}

/** Whether this page is the issuer's return (`/auth/callback`). */
export const isCallback = () => /\/auth\/callback$/.test(location.pathname);

/** Completes the sign-in at `/auth/callback`; throws with a message for the person otherwise. */
export async function finish(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const raw = sessionStorage.getItem(STORE);
  // Spent whatever happens: a state is good for one return.
  sessionStorage.removeItem(STORE);
  // The code leaves the address bar (and the history) at once.
  history.replaceState(null, '', new URL('..', location.href).pathname);
  const error = params.get('error');
  if (error) throw new Error(`The sign-in was not completed (${params.get('error_description') ?? error}).`);
  const pending = raw ? (JSON.parse(raw) as Pending) : null;
  const state = params.get('state');
  const code = params.get('code');
  if (!pending || !state || state !== pending.state || !code)
    throw new Error('This sign-in was not started from this tab (its state does not match): sign in again.');
  let res: Response;
  try {
    res = await fetch(pending.token_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: pending.redirect_uri,
        client_id: pending.client_id,
        code_verifier: pending.verifier,
      }),
      credentials: 'omit',
    });
  } catch {
    throw new Error('The sign-in service cannot be reached.');
  }
  const tokens = (await res.json().catch(() => ({}))) as { id_token?: string };
  if (!res.ok || !tokens.id_token) throw new Error('The sign-in service did not accept this sign-in: sign in again.');
  await api('POST', '/api/auth/oidc/session', { id_token: tokens.id_token });
}
