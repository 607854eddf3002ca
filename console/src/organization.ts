import type { Answer } from '../../shared/client/index.ts';
import type { ApiFailure } from './api.ts';

/**
 * The organization pages' rules, pure (unit-tested in test/unit/console.test.ts): which controls a role
 * gets (the table of docs/sign-in.md, "Roles and organizations"; the API enforces it, the page only
 * hides what would be refused), the invitation link's token taken out of the address, and the audit
 * log's lines.
 */

export type Role = 'owner' | 'admin' | 'member';
export const ROLES: readonly Role[] = ['owner', 'admin', 'member'];

/** Owners and admins manage the organization: rename, invite, change roles, remove, read the audit log. */
export const manages = (role: string | null | undefined): boolean => role === 'owner' || role === 'admin';

/** The roles a caller may invite as or give: an owner any, an admin admin or member, a member none. */
export const grantable = (role: string | null | undefined): Role[] =>
  role === 'owner' ? [...ROLES] : role === 'admin' ? ['admin', 'member'] : [];

/**
 * What the caller may do to one member's row: the roles its select offers (empty: no select) and
 * whether its button removes them or is the caller's own "leave". An admin never touches an owner;
 * anyone may leave (the API refuses the last owner, and the page shows that refusal).
 */
export function memberControls(
  caller: { id: string; role: string | null | undefined },
  member: { user_id: string; role: string },
): { roles: Role[]; action: 'remove' | 'leave' | null } {
  const self = member.user_id === caller.id;
  const touchable = manages(caller.role) && (caller.role === 'owner' || member.role !== 'owner');
  return {
    roles: touchable ? grantable(caller.role) : [],
    action: self ? 'leave' : touchable ? 'remove' : null,
  };
}

/** Where a pending invitation's token waits across a sign-in (this tab only, as the OpenID state does). */
export const INVITATION_STORE = 'acs-invitation-pending';

/** An invitation token as the API makes them: `acsi_` and 32 random bytes in base64url. */
const TOKEN = /^acsi_[A-Za-z0-9_-]{16,128}$/;

/**
 * The `invitation` parameter of a location: its token (null when absent or not of the token's form)
 * and the address without it, to put in the address bar so the token is not kept in the history.
 * `found` says the parameter was there at all (a malformed one is removed too).
 */
export function invitationIn(href: string): { found: boolean; token: string | null; rest: string } {
  const url = new URL(href);
  const value = url.searchParams.get('invitation');
  url.searchParams.delete('invitation');
  const rest = `${url.pathname}${url.search}${url.hash}`;
  if (value === null) return { found: false, token: null, rest };
  return { found: true, token: TOKEN.test(value) ? value : null, rest };
}

/** What the person reads when accepting failed, from the API's refusal. */
export function acceptFailure(error: Pick<ApiFailure, 'status' | 'message'>, email: string | null | undefined): string {
  switch (error.status) {
    case 404:
      return 'This invitation was not found, has expired (they last 7 days) or was already used: ask for a new one.';
    case 403:
      return `This invitation is for another email address. You are signed in as ${
        email ?? 'an API key with no email'
      }: sign in with the invited address to accept it.`;
    default:
      return error.message;
  }
}

/** An audit entry as the API answers it (the OpenAPI document's, through the generated client). */
export type AuditEntry = Answer<'/api/v1/audit-log', 'get'>['items'][number];

/** Who did it: the member's email where the page knows it, `operator <id>` for an operator, else the id. */
export function actorName(actor: string, members: readonly { user_id: string; email: string | null }[]): string {
  if (actor.startsWith('operator:')) return `operator ${nameOf(actor.slice('operator:'.length), members)}`;
  return nameOf(actor, members);
}

const nameOf = (id: string, members: readonly { user_id: string; email: string | null }[]) =>
  members.find((m) => m.user_id === id)?.email ?? id;

/** `invitation_sent` as "Invitation sent". */
export const actionName = (action: string): string => {
  const words = action.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
};

/** The rest of an entry in a line: its target (a member's email where known), the fields named, the detail. */
export function entryDetail(
  entry: Pick<AuditEntry, 'actor' | 'action' | 'target' | 'fields' | 'detail'>,
  members: readonly { user_id: string; email: string | null }[],
): string {
  return [
    entry.target ? nameOf(entry.target, members) : '',
    entry.fields.length ? `fields: ${entry.fields.join(', ')}` : '',
    entry.detail ?? '',
  ]
    .filter(Boolean)
    .join(' · ');
}
