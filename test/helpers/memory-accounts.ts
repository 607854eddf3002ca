import type { AccountStore, AuditStore } from '#shared/accounts/account-store.ts';
import type { AuditEntry, InvitationRecord, OrgRecord, UserRecord } from '#shared/accounts/model.ts';

/** The account store in memory, with the DynamoDB adapter's conditions (unit tests). */
export class MemoryAccountStore implements AccountStore {
  users = new Map<string, UserRecord>();
  orgs = new Map<string, OrgRecord>();
  invitations = new Map<string, InvitationRecord>();

  async getUser(id: string) {
    return structuredClone(this.users.get(id));
  }
  async createUser(r: UserRecord) {
    if (this.users.has(r.userId)) return false;
    this.users.set(r.userId, structuredClone(r));
    return true;
  }
  async replaceUser(r: UserRecord) {
    if (this.users.get(r.userId)?.version !== r.version) return false;
    this.users.set(r.userId, { ...structuredClone(r), version: r.version + 1 });
    return true;
  }
  async listMembers(orgId: string) {
    return [...this.users.values()].filter((u) => u.orgId === orgId).map((u) => structuredClone(u));
  }
  /** Newest first (by user id within an organization); `after` is the last item's id. */
  async listUsers(q: { orgId?: string; status?: string; limit: number; after?: Record<string, unknown> }) {
    const all = [...this.users.values()]
      .filter((u) => (!q.orgId || u.orgId === q.orgId) && (!q.status || u.status === q.status))
      .sort((a, b) => (q.orgId ? a.userId.localeCompare(b.userId) : b.createdAt.localeCompare(a.createdAt)));
    const from = q.after ? all.findIndex((u) => u.userId === q.after!.userId) + 1 : 0;
    const items = all.slice(from, from + q.limit).map((u) => structuredClone(u));
    return { items, ...(from + q.limit < all.length ? { next: { userId: items.at(-1)!.userId } } : {}) };
  }
  async listOrgs(q: { status?: string; limit: number; after?: Record<string, unknown> }) {
    const all = [...this.orgs.values()]
      .filter((o) => !q.status || o.status === q.status)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    const from = q.after ? all.findIndex((o) => o.orgId === q.after!.orgId) + 1 : 0;
    const items = all.slice(from, from + q.limit).map((o) => structuredClone(o));
    return { items, ...(from + q.limit < all.length ? { next: { orgId: items.at(-1)!.orgId } } : {}) };
  }
  async getOrg(id: string) {
    return structuredClone(this.orgs.get(id));
  }
  async createOrg(r: OrgRecord) {
    if (this.orgs.has(r.orgId)) return false;
    this.orgs.set(r.orgId, structuredClone(r));
    return true;
  }
  async replaceOrg(r: OrgRecord) {
    const cur = this.orgs.get(r.orgId);
    if (cur?.version !== r.version) return false;
    this.orgs.set(r.orgId, { ...structuredClone(r), owners: cur.owners, version: r.version + 1 });
    return true;
  }
  async adjustOwners(orgId: string, delta: number, floor: number) {
    const cur = this.orgs.get(orgId);
    if (!cur || cur.owners + delta < floor) return false;
    cur.owners += delta;
    return true;
  }
  async createInvitation(r: InvitationRecord) {
    this.invitations.set(r.tokenHash, structuredClone(r));
  }
  async getInvitation(h: string) {
    return structuredClone(this.invitations.get(h));
  }
  async listInvitations(orgId: string) {
    return [...this.invitations.values()].filter((i) => i.orgId === orgId);
  }
  async listInvitationsByEmail(email: string) {
    return [...this.invitations.values()].filter((i) => i.email === email);
  }
  async acceptInvitation(h: string, userId: string, at: string) {
    const i = this.invitations.get(h);
    if (!i || i.acceptedAt || i.expiresAt <= at) return false;
    i.acceptedAt = at;
    i.acceptedBy = userId;
    return true;
  }
}

export class MemoryAuditStore implements AuditStore {
  entries: AuditEntry[] = [];
  async append(e: AuditEntry) {
    if (this.entries.some((x) => x.orgId === e.orgId && x.entryId === e.entryId)) throw new Error('exists');
    this.entries.push(structuredClone(e));
  }
}
