import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { grantable, manages, memberControls, type Role } from '../organization.ts';
import {
  Ago,
  Badge,
  described,
  ErrorBox,
  Field,
  fieldErrors,
  submitting,
  Table,
  useAction,
  useLoad,
  type Me,
} from '../ui.tsx';
import type { Answer } from '../../../shared/client/index.ts';

/** The API's own types (the typed client's, generated from the OpenAPI document). */
type Org = Answer<'/api/v1/orgs/{org_id}', 'get'>;
type Member = Org['members'][number];
type Invitation = Answer<'/api/v1/orgs/{org_id}/invitations', 'get'>[number];
/** A new invitation: its link (with the token) is in this answer only. */
type NewInvitation = Answer<'/api/v1/orgs/{org_id}/invitations', 'post'>;

/**
 * `#/organization`: the caller's organization, its members with their roles and the open invitations.
 * Owners and admins rename it, invite by email (the link shown once), change roles and remove members;
 * a member sees the lists without the controls, and may leave. The API decides; this page shows its refusals.
 */
export function OrganizationPage(props: { me: Me; onLeft: () => void }) {
  const orgId = props.me.org_id;
  const org = useLoad(
    () => (orgId ? api<Org>('GET', `/api/v1/orgs/${encodeURIComponent(orgId)}`) : Promise.resolve(undefined)),
    [orgId],
  );
  // The caller's role as the organization answers it (the same as /users/me's, read fresh).
  const role = org.data?.role ?? props.me.role;
  const manager = manages(role);
  const invitations = useLoad(
    () =>
      orgId && manager
        ? api<Invitation[]>('GET', `/api/v1/orgs/${encodeURIComponent(orgId)}/invitations`)
        : Promise.resolve(undefined),
    [orgId, manager],
  );
  if (!orgId) return <p class="empty">You are not in an organization.</p>;
  const base = `/api/v1/orgs/${encodeURIComponent(orgId)}`;
  return (
    <section>
      <h1>Organization</h1>
      <ErrorBox error={org.error} />
      {org.data && (
        <>
          <OrgName org={org.data} editable={manager} base={base} onSaved={org.reload} />
          <Members
            org={org.data}
            me={{ id: props.me.id, role }}
            base={base}
            onChanged={org.reload}
            onLeft={props.onLeft}
          />
          {manager && (
            <Invitations
              base={base}
              role={role}
              list={invitations.data}
              error={invitations.error}
              onSent={invitations.reload}
            />
          )}
        </>
      )}
    </section>
  );
}

function OrgName(props: { org: Org; editable: boolean; base: string; onSaved: () => void }) {
  const [name, setName] = useState(props.org.name);
  useEffect(() => setName(props.org.name), [props.org.name]);
  const [saved, setSaved] = useState(false);
  const save = useAction(async () => {
    setSaved(false);
    await api('PATCH', props.base, { name: name.trim() });
    setSaved(true);
    props.onSaved();
  });
  const errors = fieldErrors(save.error);
  return (
    <div class="group">
      <dl class="facts">
        <div>
          <dt>Name</dt>
          <dd data-testid="org-name">{props.org.name}</dd>
        </div>
        <div>
          <dt>Your role</dt>
          <dd data-testid="org-role">{props.org.role ?? '-'}</dd>
        </div>
        <div>
          <dt>Plan</dt>
          <dd>{props.org.plan}</dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>
            <Ago at={props.org.created_at} />
          </dd>
        </div>
        {props.org.is_personal && (
          <div>
            <dt>Kind</dt>
            <dd>personal</dd>
          </div>
        )}
      </dl>
      {props.editable && (
        <form class="row" noValidate onSubmit={submitting(save.call)}>
          <Field id="org-rename" label="Rename the organization" error={errors.name}>
            <input
              type="text"
              {...described('org-rename', errors.name)}
              maxLength={100}
              value={name}
              onInput={(e) => {
                setName(e.currentTarget.value);
                setSaved(false);
              }}
            />
          </Field>
          <button type="submit" disabled={save.busy || !name.trim() || name.trim() === props.org.name}>
            Rename
          </button>
          {saved && (
            <span class="saved" role="status">
              Renamed
            </span>
          )}
        </form>
      )}
      {save.error && !errors.name && <ErrorBox error={save.error} />}
    </div>
  );
}

function Members(props: {
  org: Org;
  me: { id: string; role: string | null };
  base: string;
  onChanged: () => void;
  onLeft: () => void;
}) {
  const changeRole = useAction(async (m: Member, role: Role) => {
    await api('PATCH', `${props.base}/members/${encodeURIComponent(m.user_id)}`, { role });
    props.onChanged();
  });
  const remove = useAction(async (m: Member, leaving: boolean) => {
    const who = m.email ?? m.user_id;
    const question = leaving
      ? `Leave ${props.org.name}? You get a personal organization of your own; your keys and sessions end (sign in again), your sandboxes pause, your conversations stay yours.`
      : `Remove ${who} from ${props.org.name}? Their keys and sessions end and their sandboxes pause; their conversations stay theirs.`;
    if (!confirm(question)) return;
    await api('DELETE', `${props.base}/members/${encodeURIComponent(m.user_id)}`);
    if (leaving) props.onLeft();
    else props.onChanged();
  });
  const shown = props.org.members;
  return (
    <div class="group">
      <h2>Members</h2>
      <ErrorBox error={changeRole.error ?? remove.error} />
      <Table caption="Members of the organization" columns={['Member', 'Role', 'Status', 'Actions']}>
        {shown.map((m) => {
          const controls = memberControls(props.me, m);
          const who = m.email ?? m.user_id;
          return (
            <tr data-testid="member-row">
              <td>
                {m.email ?? <code>{m.user_id}</code>}
                {m.user_id === props.me.id && <Badge>you</Badge>}
              </td>
              <td>
                {controls.roles.length ? (
                  <select
                    aria-label={`Role of ${who}`}
                    value={m.role}
                    disabled={changeRole.busy}
                    onChange={(e) => void changeRole.call(m, e.currentTarget.value as Role)}
                  >
                    {/* The current role stays listed even where the caller could not give it. */}
                    {[...new Set([m.role, ...controls.roles])].map((r) => (
                      <option value={r}>{r}</option>
                    ))}
                  </select>
                ) : (
                  <span data-testid="member-role">{m.role}</span>
                )}
              </td>
              <td>
                <Badge tone={m.status === 'active' ? 'ok' : 'warn'}>{m.status}</Badge>
              </td>
              <td>
                {controls.action && (
                  <button
                    type="button"
                    class="danger small"
                    disabled={remove.busy}
                    onClick={() => void remove.call(m, controls.action === 'leave')}
                  >
                    {controls.action === 'leave' ? 'Leave organization' : `Remove ${who}`}
                  </button>
                )}
              </td>
            </tr>
          );
        })}
      </Table>
    </div>
  );
}

function Invitations(props: {
  base: string;
  role: string | null;
  list: Invitation[] | undefined;
  error: unknown;
  onSent: () => void;
}) {
  const roles = grantable(props.role);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const [sent, setSent] = useState<NewInvitation | null>(null);
  const [copied, setCopied] = useState(false);
  const invite = useAction(async () => {
    setSent(null);
    setCopied(false);
    setSent(await api<NewInvitation>('POST', `${props.base}/invitations`, { email: email.trim(), role }));
    setEmail('');
    props.onSent();
  });
  // The clipboard may be refused (no permission, no secure context): the link stays selectable.
  const copy = (link: string) =>
    navigator.clipboard?.writeText(link).then(
      () => setCopied(true),
      () => setCopied(false),
    );
  const errors = fieldErrors(invite.error);
  const open = props.list?.filter((i) => i.status === 'open') ?? [];
  return (
    <div class="group">
      <h2>Invitations</h2>
      <form class="row" noValidate onSubmit={submitting(invite.call)}>
        <Field id="invite-email" label="Invite by email" error={errors.email}>
          <input
            type="email"
            {...described('invite-email', errors.email)}
            autocomplete="off"
            maxLength={254}
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </Field>
        <Field id="invite-role" label="As" error={errors.role}>
          <select
            {...described('invite-role', errors.role)}
            value={role}
            onChange={(e) => setRole(e.currentTarget.value as Role)}
          >
            {roles.map((r) => (
              <option value={r}>{r}</option>
            ))}
          </select>
        </Field>
        <button type="submit" disabled={invite.busy || !email.trim()}>
          Send invitation
        </button>
      </form>
      {invite.error && !errors.email && !errors.role && <ErrorBox error={invite.error} />}
      {sent && (
        <div class="new-key" role="status">
          <p>
            An invitation for <strong>{sent.email}</strong> as {sent.role}, valid until{' '}
            {new Date(sent.expires_at).toLocaleString()}. Send them this link: it is shown only once, and only a person
            signed in with that email address can accept it.
          </p>
          <div class="row">
            <input
              type="text"
              readOnly
              aria-label="The invitation link"
              value={sent.link}
              onFocus={(e) => e.currentTarget.select()}
            />
            <button type="button" class="secondary" onClick={() => void copy(sent.link)}>
              {copied ? 'Copied' : 'Copy link'}
            </button>
            <button type="button" class="secondary" onClick={() => setSent(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <ErrorBox error={props.error} />
      {props.list &&
        (open.length === 0 ? (
          <p class="empty">No open invitations.</p>
        ) : (
          <Table caption="Open invitations" columns={['Email', 'Role', 'Sent', 'Expires']}>
            {open.map((i) => (
              <tr data-testid="invitation-row">
                <td>{i.email}</td>
                <td>{i.role}</td>
                <td>
                  <Ago at={i.created_at} />
                </td>
                <td>
                  <time dateTime={i.expires_at}>{new Date(i.expires_at).toLocaleString()}</time>
                </td>
              </tr>
            ))}
          </Table>
        ))}
    </div>
  );
}
