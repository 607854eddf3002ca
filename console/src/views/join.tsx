import { api, ApiFailure } from '../api.ts';
import { acceptFailure } from '../organization.ts';
import { ErrorBox, useAction, useLoad, type Me } from '../ui.tsx';
import type { Answer } from '../../../shared/client/index.ts';

/** The API's own types (the typed client's, generated from the OpenAPI document). */
type Orgs = Answer<'/api/organizations', 'get'>;
type Invitation = Answer<'/api/v1/invitations/{token}', 'get'>;
type Accepted = Answer<'/api/v1/invitations/{token}/accept', 'post'>;

/**
 * An invitation link opened (`/?invitation=<token>`, the token already out of the address bar and kept
 * in this tab's sessionStorage by the shell): the invitation is read first (`GET /api/v1/invitations/{token}`),
 * so the question names the organization and the role, then "Join" is `POST .../accept`. An invitation
 * for another email, or one spent or expired, is said at once, with no "Join" to press; one for an
 * organization the person is already in says so.
 * `onDone(message, joined)`: the token is spent or set aside (message: what happened, for the shell to show;
 * "Not now" forgets it here, and the link still works until it expires);
 * a refusal for another email keeps it, so signing in again with the invited address can still accept.
 */
export function JoinPage(props: { token: string; me: Me; onDone: (message: string | null, joined: boolean) => void }) {
  const path = `/api/v1/invitations/${encodeURIComponent(props.token)}`;
  const invitation = useLoad(() => api<Invitation>('GET', path), [path]);
  const current = useLoad(() => api<Orgs>('GET', '/api/organizations'), []);
  const here = current.data?.items.find((o) => o.id === current.data?.current_org_id);
  const accept = useAction(async () => {
    let joined: Accepted;
    try {
      joined = await api<Accepted>('POST', `${path}/accept`);
    } catch (err) {
      if (!(err instanceof ApiFailure)) throw err;
      // Not found, expired, used, or already a member: the token will not do more; drop it but keep the message.
      if (err.status === 404 || err.status === 409) {
        props.onDone(acceptFailure(err, props.me.email), false);
        return;
      }
      throw new Error(acceptFailure(err, props.me.email));
    }
    props.onDone(`You joined ${invitation.data?.org_name ?? 'the organization'} as ${joined.role}.`, true);
  });
  const refused =
    invitation.error instanceof ApiFailure
      ? new Error(acceptFailure(invitation.error, props.me.email))
      : invitation.error;
  const offer = invitation.data && !invitation.data.already_member ? invitation.data : undefined;
  return (
    <section class="join" aria-labelledby="join-title">
      <h1 id="join-title">
        {offer ? `Join ${offer.org_name} as ${offer.role}?` : 'Join the organization that invited you?'}
      </h1>
      <p>
        You opened an invitation link. You are signed in as <strong>{props.me.email ?? props.me.id}</strong>: the
        invitation is accepted only for the email address it was sent to.
      </p>
      {invitation.data?.already_member && (
        <p>
          You are already a member of <strong>{invitation.data.org_name}</strong>: there is nothing to join.
        </p>
      )}
      {offer && here && (
        <p>
          Joining moves you out of <strong>{here.name}</strong>
          {here.is_personal ? ' (your personal organization, closed if nobody else is in it)' : ''}. Your conversations
          stay yours; the organization you join sees its members' usage, not their conversations. The invitation expires{' '}
          {new Date(offer.expires_at).toLocaleDateString()}.
        </p>
      )}
      <ErrorBox error={refused ?? accept.error} />
      <div class="actions">
        {offer && (
          <button type="button" disabled={accept.busy} onClick={() => void accept.call()}>
            Join
          </button>
        )}
        <button type="button" class="secondary" disabled={accept.busy} onClick={() => props.onDone(null, false)}>
          {offer ? 'Not now' : 'Close'}
        </button>
      </div>
    </section>
  );
}
