/** People, organizations, invitations and audit entries as stored (docs/data-model.md, "users, orgs, invitations"). */

export const roles = ['owner', 'admin', 'member'] as const;
export type Role = (typeof roles)[number];

/** `deleted`: the person deleted their account; the record stays as a tombstone (the id stays taken). */
export type AccountStatus = 'active' | 'suspended' | 'deleted';

export interface UserRecord {
  userId: string;
  orgId: string;
  role: Role;
  status: AccountStatus;
  /** For an OpenID person: their issuer and subject (the identity); absent for a keys-CLI user. */
  issuer?: string;
  sub?: string;
  /** The latest email the issuer vouched for (`email_verified`), lower case; never an identity on its own. */
  email?: string;
  emailVerified?: boolean;
  /** Keys and sessions made before this instant are refused (set when the person leaves or is removed). */
  credentialsNotBefore?: string;
  /** When the person deleted their account (`status` deleted), and when the daily purge finished removing their data. */
  deletedAt?: string;
  purgedAt?: string;
  createdAt: string;
  updatedAt: string;
  /** Every replace is conditioned on the version it read. */
  version: number;
}

export type OrgStatus = 'active' | 'suspended' | 'closed';

export interface OrgRecord {
  orgId: string;
  name: string;
  /** A plan's name (shared/plans defines them); the contracts' `default_plan` unless changed. */
  plan: string;
  status: OrgStatus;
  /** A personal organization: made for one person on first use or on removal from another. */
  personal: boolean;
  /** The person a personal organization was made for. */
  personalOf?: string;
  /** How many owners it has: the last-owner rule reads it (conditional ADD, never below 1 while members remain). */
  owners: number;
  createdAt: string;
  updatedAt: string;
  version: number;
}

export interface InvitationRecord {
  /** SHA-256 of the token; the token is only in the link given once. */
  tokenHash: string;
  orgId: string;
  email: string;
  role: Role;
  invitedBy: string;
  createdAt: string;
  expiresAt: string;
  expiresAtEpoch: number;
  acceptedAt?: string;
  acceptedBy?: string;
}

export interface AuditEntry {
  orgId: string;
  /** `<ISO time>#<random>`: newest first in a descending Query. */
  entryId: string;
  at: string;
  /** Who did it: a user id, `operator:<user id>` for an operator acting, or `system`. */
  actor: string;
  action: string;
  /** The user, key, invitation or organization acted on. */
  target?: string;
  /** Names of fields changed: never their values. */
  fields?: string[];
  /** A short, secret-free note (a role, a plan name, a reason). */
  detail?: string;
  expiresAtEpoch: number;
}

/** Every action the audit log records (docs/sign-in.md lists them). */
export const auditActions = [
  'sign_in',
  'sign_up',
  'sign_in_refused',
  'key_created',
  'key_revoked',
  'key_expired',
  'invitation_sent',
  'invitation_accepted',
  'role_changed',
  'member_removed',
  'member_left',
  'settings_saved',
  'secret_set',
  'secret_cleared',
  'user_suspended',
  'user_reactivated',
  'org_suspended',
  'org_reactivated',
  'users_listed',
  'orgs_listed',
  'account_deleted',
  'org_updated',
  'plan_changed',
  'billing_customer_set',
  'credits_granted',
  'correction_recorded',
] as const;
export type AuditAction = (typeof auditActions)[number];
