import { createHash, randomBytes } from 'node:crypto';
import type { AccountStore } from '#shared/accounts/account-store.ts';
import type { Accounts } from '#shared/accounts/accounts.ts';
import type { Audit } from '#shared/accounts/audit.ts';
import type {
  AccountStatus,
  InvitationRecord,
  OrgRecord,
  OrgStatus,
  Role,
  UserRecord,
} from '#shared/accounts/model.ts';
import type { ApiKeys } from '#shared/auth/api-keys.ts';
import { ApiError, conflict, forbidden, invalidField, notFound } from '#shared/http/errors.ts';
import { DEFAULT_PLANS, type Plans } from '#shared/plans/model.ts';
import type { SandboxService } from '#shared/sandboxes/service.ts';

/** Who is acting, as the authorizer saw them. */
export interface Caller {
  userId: string;
  orgId: string;
  role: Role;
  email?: string;
  operator: boolean;
}

/** How long an invitation stays open. */
export const INVITATION_DAYS = 7;
const rank: Record<Role, number> = { member: 0, admin: 1, owner: 2 };
const invitationHash = (token: string) => createHash('sha256').update(token).digest('hex');
const LAST_OWNER = 'The last owner cannot leave or stop being owner: make another member an owner first';

export const orgView = (o: OrgRecord) => ({
  id: o.orgId,
  name: o.name,
  plan: o.plan,
  status: o.status,
  is_personal: o.personal,
  created_at: o.createdAt,
});
export const memberView = (u: UserRecord) => ({
  user_id: u.userId,
  email: u.email ?? null,
  role: u.role,
  status: u.status,
});
/** A person as operators list them: who, where, in what state; never a key, a hash or a setting. */
export const adminUserView = (u: UserRecord) => ({
  user_id: u.userId,
  email: u.email ?? null,
  email_verified: u.emailVerified === true,
  issuer: u.issuer ?? null,
  org_id: u.orgId,
  role: u.role,
  status: u.status,
  created_at: u.createdAt,
  updated_at: u.updatedAt,
});
export const adminOrgView = (o: OrgRecord) => ({ ...orgView(o), owners: o.owners, updated_at: o.updatedAt });
const invitationView = (i: InvitationRecord, now: string) => ({
  id: i.tokenHash.slice(0, 16),
  email: i.email,
  role: i.role,
  created_at: i.createdAt,
  expires_at: i.expiresAt,
  status: i.acceptedAt ? 'accepted' : i.expiresAt <= now ? 'expired' : 'open',
});

/** What a removal or a suspension does to a person's live work. */
export interface Offboarding {
  sandboxes: Pick<SandboxService, 'pauseAll'>;
  apiKeys: Pick<ApiKeys, 'list' | 'revoke'>;
  /** Closes the person's open event streams (locally the gateway's sockets; on AWS DeleteConnection). */
  closeStreams: (userId: string) => Promise<void>;
}

/**
 * Organizations, members and invitations, with the rules of docs/sign-in.md ("Roles"): owners and
 * admins invite, change roles and remove members (an admin never touches an owner), a member may
 * leave, the last owner cannot; members never see each other's conversations, sandboxes, settings
 * or keys (those routes are per user and never look at the organization).
 */
export class Organizations {
  constructor(
    private readonly store: AccountStore,
    private readonly accounts: Accounts,
    private readonly audit: Audit,
    private readonly offboarding: () => Offboarding,
    private readonly now: () => Date = () => new Date(),
    /** The configured plans (a plan change must name one); read only by the routes that change a plan. */
    private readonly plans: () => Plans = () => DEFAULT_PLANS,
  ) {}

  /** `GET /api/organizations`: Agent Canvas's shape. A person is in exactly one organization. */
  async listMine(caller: Caller) {
    const org = await this.store.getOrg(caller.orgId);
    return {
      items: org ? [{ id: org.orgId, name: org.name, is_personal: org.personal }] : [],
      current_org_id: org?.orgId ?? null,
    };
  }

  async get(caller: Caller, orgId: string) {
    const org = await this.visible(caller, orgId);
    const members = (await this.store.listMembers(orgId)).filter((m) => m.status !== 'deleted');
    return { ...orgView(org), role: caller.orgId === orgId ? caller.role : null, members: members.map(memberView) };
  }

  async update(caller: Caller, orgId: string, body: { name?: string; plan?: string }) {
    const org = await this.visible(caller, orgId);
    if (body.plan !== undefined && !caller.operator) throw forbidden('Only an operator can change the plan');
    if (body.plan !== undefined) this.knownPlan(body.plan);
    if (body.name !== undefined && !caller.operator) this.requireManager(caller, orgId);
    const next = { ...org, ...body, updatedAt: this.now().toISOString() };
    if (!(await this.store.replaceOrg(next))) throw conflict('The organization changed meanwhile; try again');
    const actor = this.actor(caller, orgId);
    if (body.name !== undefined)
      await this.audit.record(orgId, actor, 'org_updated', { target: orgId, fields: ['name'] });
    if (body.plan !== undefined && body.plan !== org.plan)
      await this.audit.record(orgId, actor, 'plan_changed', { target: orgId, detail: `${org.plan} -> ${body.plan}` });
    this.accounts.forget();
    return orgView({ ...next, version: next.version + 1 });
  }

  async invite(caller: Caller, orgId: string, body: { email: string; role: Role }, baseUrl: string) {
    const org = await this.visible(caller, orgId);
    this.requireManager(caller, orgId);
    if (org.status !== 'active') throw conflict('The organization is not active');
    if (rank[body.role] > rank[caller.role] && !caller.operator)
      throw forbidden(`An ${caller.role} cannot invite an ${body.role}`);
    const token = `acsi_${randomBytes(32).toString('base64url')}`;
    const now = this.now();
    const expires = new Date(now.getTime() + INVITATION_DAYS * 86_400_000);
    const record: InvitationRecord = {
      tokenHash: invitationHash(token),
      orgId,
      email: body.email.toLowerCase(),
      role: body.role,
      invitedBy: caller.userId,
      createdAt: now.toISOString(),
      expiresAt: expires.toISOString(),
      expiresAtEpoch: Math.ceil(expires.getTime() / 1000),
    };
    await this.store.createInvitation(record);
    await this.audit.record(orgId, this.actor(caller, orgId), 'invitation_sent', {
      target: record.email,
      detail: body.role,
    });
    return {
      ...invitationView(record, now.toISOString()),
      token,
      link: `${baseUrl}/?invitation=${encodeURIComponent(token)}`,
    };
  }

  async listInvitations(caller: Caller, orgId: string) {
    await this.visible(caller, orgId);
    this.requireManager(caller, orgId);
    const now = this.now().toISOString();
    return (await this.store.listInvitations(orgId)).map((i) => invitationView(i, now));
  }

  async changeRole(caller: Caller, orgId: string, userId: string, role: Role) {
    await this.visible(caller, orgId);
    this.requireManager(caller, orgId);
    const target = await this.member(orgId, userId);
    if (!caller.operator && caller.role !== 'owner' && (target.role === 'owner' || role === 'owner'))
      throw forbidden('Only an owner can make or unmake an owner');
    if (target.role === role) return memberView(target);
    if (target.role === 'owner' && !(await this.store.adjustOwners(orgId, -1, 1))) throw conflict(LAST_OWNER);
    const next = { ...target, role, updatedAt: this.now().toISOString() };
    if (!(await this.store.replaceUser(next))) {
      if (target.role === 'owner') await this.store.adjustOwners(orgId, 1, 1);
      throw conflict('The member changed meanwhile; try again');
    }
    if (role === 'owner') await this.store.adjustOwners(orgId, 1, 1);
    this.accounts.forget(userId);
    await this.audit.record(orgId, this.actor(caller, orgId), 'role_changed', {
      target: userId,
      detail: `${target.role} -> ${role}`,
    });
    return memberView({ ...next, version: next.version + 1 });
  }

  /**
   * Removes a member (or, for one's own id, leaves): they get a new personal organization on the
   * default plan, their keys and sessions end, their sandboxes pause and their streams close; their
   * conversations stay theirs.
   */
  async remove(caller: Caller, orgId: string, userId: string) {
    await this.visible(caller, orgId);
    const leaving = userId === caller.userId && caller.orgId === orgId;
    if (!leaving) this.requireManager(caller, orgId);
    const target = await this.member(orgId, userId);
    if (!leaving && !caller.operator && caller.role !== 'owner' && target.role === 'owner')
      throw forbidden('Only an owner can remove an owner');
    if (target.role === 'owner' && !(await this.store.adjustOwners(orgId, -1, 1))) throw conflict(LAST_OWNER);
    const at = this.now().toISOString();
    const personal = await this.accounts.newPersonalOrg(userId, false);
    const moved: UserRecord = {
      ...target,
      orgId: personal.orgId,
      role: 'owner',
      credentialsNotBefore: at,
      updatedAt: at,
    };
    if (!(await this.store.replaceUser(moved))) {
      if (target.role === 'owner') await this.store.adjustOwners(orgId, 1, 1);
      throw conflict('The member changed meanwhile; try again');
    }
    this.accounts.forget(userId);
    await this.audit.record(orgId, this.actor(caller, orgId), leaving ? 'member_left' : 'member_removed', {
      target: userId,
    });
    await this.endWork(userId, 'Paused: its owner left the organization');
    return { success: true as const, user_id: userId, new_org_id: personal.orgId };
  }

  /**
   * An open invitation the caller may accept, and the organization it is to: a token that is unknown,
   * spent or expired, or whose organization closed, is a 404; one for another email a 403 that names
   * nothing of the organization (a link that reached the wrong person tells them nothing).
   */
  private async openInvitation(caller: Caller, token: string) {
    const gone = () => notFound('Invitation not found, expired or already used');
    const invitation = await this.store.getInvitation(invitationHash(token));
    if (!invitation || invitation.acceptedAt || invitation.expiresAt <= this.now().toISOString()) throw gone();
    if (!caller.email || caller.email !== invitation.email)
      throw forbidden('This invitation is for another email address (it needs the invited, verified email)');
    const org = await this.store.getOrg(invitation.orgId);
    if (org?.status !== 'active') throw gone();
    return { invitation, org };
  }

  /**
   * `GET /api/v1/invitations/{token}`: what accepting would do, for the invitee to decide (the
   * organization's name, the role), under the same checks as the accept; reads only.
   */
  async describeInvitation(caller: Caller, token: string) {
    const { invitation, org } = await this.openInvitation(caller, token);
    return {
      org_id: org.orgId,
      org_name: org.name,
      role: invitation.role,
      email: invitation.email,
      expires_at: invitation.expiresAt,
      already_member: caller.orgId === org.orgId,
    };
  }

  /**
   * Accepting an invitation moves the caller into its organization; their personal one closes if left
   * empty. Their live sandboxes pause (workspaces kept; closing records to the old organization), so
   * usage up to the move stays with the old organization exactly: a sandbox records the organization
   * it was started or resumed under, and a resume after the move starts under the new one and its plan.
   * Their keys, sessions and streams stay: the person is the same.
   */
  async accept(caller: Caller, token: string) {
    const { invitation } = await this.openInvitation(caller, token);
    const at = this.now().toISOString();
    if (caller.orgId === invitation.orgId) throw conflict('You are already a member of this organization');
    const current = await this.accounts.read(caller.userId);
    if (!current) throw notFound('Invitation not found, expired or already used');
    const { user, org } = current;
    const others = (await this.store.listMembers(org.orgId)).filter(
      (m) => m.userId !== user.userId && m.status !== 'deleted',
    );
    if (user.role === 'owner' && others.length > 0 && !(await this.store.adjustOwners(org.orgId, -1, 1)))
      throw conflict(LAST_OWNER);
    if (!(await this.store.acceptInvitation(invitation.tokenHash, user.userId, at))) {
      if (user.role === 'owner' && others.length > 0) await this.store.adjustOwners(org.orgId, 1, 1);
      throw notFound('Invitation not found, expired or already used');
    }
    const moved: UserRecord = { ...user, orgId: invitation.orgId, role: invitation.role, updatedAt: at };
    if (!(await this.store.replaceUser(moved))) throw conflict('Your account changed meanwhile; try again');
    if (invitation.role === 'owner') await this.store.adjustOwners(invitation.orgId, 1, 1);
    if (others.length === 0) await this.store.replaceOrg({ ...org, status: 'closed', owners: 0, updatedAt: at });
    this.accounts.forget(user.userId);
    await this.audit.record(org.orgId, user.userId, 'member_left', {
      target: user.userId,
      detail: 'joined another organization',
    });
    await this.audit.record(invitation.orgId, user.userId, 'invitation_accepted', {
      target: user.userId,
      detail: invitation.role,
    });
    await this.offboarding().sandboxes.pauseAll(user.userId, 'Paused: its owner moved to another organization');
    return { success: true as const, org_id: invitation.orgId, role: invitation.role };
  }

  // --- operators ---------------------------------------------------------------------------------

  /**
   * `PUT /api/v1/admin/orgs/{org_id}/plan`: an operator puts an organization on a configured plan.
   * It applies from the next start and the next ledger record (no pro-rating; contracts page);
   * running sandboxes keep running. Audited as `plan_changed` with both names.
   */
  async setPlan(caller: Caller, orgId: string, plan: string) {
    this.requireOperator(caller);
    this.knownPlan(plan);
    for (let attempt = 0; attempt < 5; attempt++) {
      const org = await this.store.getOrg(orgId);
      if (!org || org.status === 'closed') throw notFound('Organization not found');
      if (org.plan !== plan) {
        if (!(await this.store.replaceOrg({ ...org, plan, updatedAt: this.now().toISOString() }))) continue;
        await this.audit.record(orgId, `operator:${caller.userId}`, 'plan_changed', {
          target: orgId,
          detail: `${org.plan} -> ${plan}`,
        });
      }
      this.accounts.forget();
      return { success: true as const, org_id: orgId, plan, previous_plan: org.plan };
    }
    throw conflict('The organization changed meanwhile; try again');
  }

  /**
   * `GET /api/v1/admin/users`: a page of people, newest first (one organization's: by user id),
   * through an index, never a Scan. Each page read is audited as `users_listed`, naming the operator:
   * in the listed organization's log when filtered by one, else in the operator's own.
   */
  async listUsers(
    caller: Caller,
    q: { orgId?: string; status?: AccountStatus; limit: number; after?: Record<string, unknown> },
  ) {
    this.requireOperator(caller);
    const page = await this.store.listUsers(q);
    const detail = [q.status && `status=${q.status}`, q.after && 'a later page'].filter(Boolean).join(', ');
    await this.audit.record(q.orgId ?? caller.orgId, `operator:${caller.userId}`, 'users_listed', {
      ...(q.orgId ? { target: q.orgId } : {}),
      ...(detail ? { detail } : {}),
    });
    return { items: page.items.map(adminUserView), next: page.next };
  }

  /** `GET /api/v1/admin/orgs`: a page of organizations, newest first; audited as `orgs_listed` in the operator's own log. */
  async listOrgs(caller: Caller, q: { status?: OrgStatus; limit: number; after?: Record<string, unknown> }) {
    this.requireOperator(caller);
    const page = await this.store.listOrgs(q);
    const detail = [q.status && `status=${q.status}`, q.after && 'a later page'].filter(Boolean).join(', ');
    await this.audit.record(caller.orgId, `operator:${caller.userId}`, 'orgs_listed', detail ? { detail } : {});
    return { items: page.items.map(adminOrgView), next: page.next };
  }

  /** 422 naming `plan` unless it is one of the configured plans (a typo would silently mean the default plan). */
  private knownPlan(plan: string): void {
    if (!this.plans().has(plan))
      throw invalidField(
        ['body', 'plan'],
        `Unknown plan "${plan}": the configured plans are ${this.plans().names.join(', ')}`,
        plan,
      );
  }

  async setUserStatus(caller: Caller, userId: string, suspend: boolean) {
    this.requireOperator(caller);
    const user = await this.store.getUser(userId);
    if (!user || user.status === 'deleted') throw notFound('User not found');
    const status = suspend ? 'suspended' : 'active';
    if (user.status !== status) {
      if (!(await this.store.replaceUser({ ...user, status, updatedAt: this.now().toISOString() })))
        throw conflict('The user changed meanwhile; try again');
    }
    this.accounts.forget(userId);
    await this.audit.record(user.orgId, `operator:${caller.userId}`, suspend ? 'user_suspended' : 'user_reactivated', {
      target: userId,
    });
    const paused = suspend ? await this.endWork(userId, 'Paused: the account is suspended', false) : [];
    return { success: true as const, user_id: userId, status, paused_sandbox_ids: paused };
  }

  async setOrgStatus(caller: Caller, orgId: string, suspend: boolean) {
    this.requireOperator(caller);
    const org = await this.store.getOrg(orgId);
    if (!org || org.status === 'closed') throw notFound('Organization not found');
    const status = suspend ? 'suspended' : 'active';
    if (org.status !== status) {
      if (!(await this.store.replaceOrg({ ...org, status, updatedAt: this.now().toISOString() })))
        throw conflict('The organization changed meanwhile; try again');
    }
    this.accounts.forget();
    await this.audit.record(orgId, `operator:${caller.userId}`, suspend ? 'org_suspended' : 'org_reactivated', {
      target: orgId,
    });
    const paused: string[] = [];
    if (suspend)
      for (const m of await this.store.listMembers(orgId))
        paused.push(...(await this.endWork(m.userId, 'Paused: the organization is suspended', false)));
    return { success: true as const, org_id: orgId, status, paused_sandbox_ids: paused };
  }

  /** Pauses the person's sandboxes, closes their streams and (on removal) revokes their keys. */
  private async endWork(userId: string, detail: string, revokeKeys = true): Promise<string[]> {
    const work = this.offboarding();
    if (revokeKeys)
      for (const k of await work.apiKeys.list(userId)) if (!k.revokedAt) await work.apiKeys.revoke(k.keyId);
    await work.closeStreams(userId);
    return work.sandboxes.pauseAll(userId, detail);
  }

  /** The organization, if the caller is in it or is an operator; a 404 otherwise (a foreign id is not found). */
  private async visible(caller: Caller, orgId: string): Promise<OrgRecord> {
    if (caller.orgId !== orgId && !caller.operator) throw notFound('Organization not found');
    const org = await this.store.getOrg(orgId);
    if (!org || org.status === 'closed') throw notFound('Organization not found');
    return org;
  }

  private async member(orgId: string, userId: string): Promise<UserRecord> {
    const user = await this.store.getUser(userId);
    if (!user || user.orgId !== orgId || user.status === 'deleted') throw notFound('Member not found');
    return user;
  }

  private requireManager(caller: Caller, orgId: string): void {
    if (caller.operator) return;
    if (caller.orgId !== orgId || caller.role === 'member') throw forbidden('Only an owner or admin can do this');
  }

  /** A 403 for anyone but an operator (as every admin route answers). */
  requireOperator(caller: Caller): void {
    if (!caller.operator) throw new ApiError(403, { detail: 'Only an operator can do this' });
  }

  private actor(caller: Caller, orgId: string): string {
    return caller.operator && caller.orgId !== orgId ? `operator:${caller.userId}` : caller.userId;
  }
}
