import type {
  AccountStatus,
  AuditEntry,
  InvitationRecord,
  OrgRecord,
  OrgStatus,
  UserRecord,
} from '#shared/accounts/model.ts';

/** A page of a listing and where the next one starts (a store key, signed into a cursor by the route). */
export interface StorePage<T> {
  items: T[];
  next?: Record<string, unknown>;
}

/**
 * Storage of people, organizations and invitations (tables `users`, `orgs`, `invitations`). Every
 * change is one conditional single-item write (dynalite has no transactions).
 */
export interface AccountStore {
  getUser(userId: string): Promise<UserRecord | undefined>;
  /** false when the user exists already. */
  createUser(record: UserRecord): Promise<boolean>;
  /** Writes the record with `version + 1`, if the stored one still has `record.version`; false otherwise. */
  replaceUser(record: UserRecord): Promise<boolean>;
  listMembers(orgId: string): Promise<UserRecord[]>;
  /**
   * Operators' listing, never a Scan: every user newest first (index `listed`), the suspended ones
   * (sparse index `suspended`), or one organization's (`byOrg`, by user id); `status` filters.
   */
  listUsers(q: {
    orgId?: string;
    status?: AccountStatus;
    limit: number;
    after?: Record<string, unknown>;
  }): Promise<StorePage<UserRecord>>;
  /** Operators' listing of organizations newest first (`listed`; the suspended ones through `suspended`). */
  listOrgs(q: { status?: OrgStatus; limit: number; after?: Record<string, unknown> }): Promise<StorePage<OrgRecord>>;
  getOrg(orgId: string): Promise<OrgRecord | undefined>;
  createOrg(record: OrgRecord): Promise<boolean>;
  replaceOrg(record: OrgRecord): Promise<boolean>;
  /** ADD `delta` to the owner count, only while the result stays at least `floor`; false otherwise. */
  adjustOwners(orgId: string, delta: number, floor: number): Promise<boolean>;
  createInvitation(record: InvitationRecord): Promise<void>;
  getInvitation(tokenHash: string): Promise<InvitationRecord | undefined>;
  listInvitations(orgId: string): Promise<InvitationRecord[]>;
  listInvitationsByEmail(email: string): Promise<InvitationRecord[]>;
  /** Marks it accepted if it is still open and unexpired at `at`; false otherwise (used, expired, gone). */
  acceptInvitation(tokenHash: string, userId: string, at: string): Promise<boolean>;
}

/** The audit log: append only (PutItem conditioned on `attribute_not_exists`), read newest first. */
export interface AuditStore {
  append(entry: AuditEntry): Promise<void>;
}
export interface AuditReader {
  /** A page of an organization's entries, newest first; `after` is the last page's end. */
  list(
    orgId: string,
    limit: number,
    after?: Record<string, unknown>,
  ): Promise<{ items: AuditEntry[]; next?: Record<string, unknown> }>;
}
