import { createHash, randomBytes } from 'node:crypto';
import type { AccountStore } from '#shared/accounts/account-store.ts';
import type { Audit } from '#shared/accounts/audit.ts';
import { DEFAULT_PLAN, operatorEntries, signupMode, type SignupMode } from '#shared/accounts/config.ts';
import type { OrgRecord, Role, UserRecord } from '#shared/accounts/model.ts';
import { KEY_CACHE_SECONDS } from '#shared/auth/key-cache.ts';

/** A person as an OpenID token names them: the identity is (issuer, sub); the email only when verified. */
export interface PersonClaims {
  issuer: string;
  sub: string;
  email?: string;
  emailVerified?: boolean;
  /** Cognito groups the token lists (`cognito:groups`): `operators` makes an operator. */
  groups?: string[];
}

export interface Account {
  user: UserRecord;
  org: OrgRecord;
}

/** Why a person cannot be signed in; `detail` is what the 401 says. */
export class SignInRefused extends Error {
  override name = 'SignInRefused';
}

/** The user id of an OpenID person: derived from (issuer, sub), so the same person always maps to one record. */
export const personUserId = (issuer: string, sub: string) =>
  `oidc_${createHash('sha256').update(`${issuer}\n${sub}`).digest('hex').slice(0, 32)}`;

/** The first personal organization of a user: derived from the user id, so a retried first use finds the one it made. */
export const personalOrgId = (userId: string) =>
  `org_${createHash('sha256').update(`personal\n${userId}`).digest('hex').slice(0, 24)}`;

const newOrgId = () => `org_${randomBytes(12).toString('hex')}`;

/** Accounts read within KEY_CACHE_SECONDS, per process (like key records): suspension is effective everywhere within that time. */
class AccountCache {
  private readonly entries = new Map<string, { account: Account; expires: number }>();
  get(userId: string): Account | undefined {
    const e = this.entries.get(userId);
    if (!e || Date.now() >= e.expires) return undefined;
    return e.account;
  }
  put(account: Account): void {
    if (this.entries.size >= 1000) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(account.user.userId, { account, expires: Date.now() + KEY_CACHE_SECONDS * 1000 });
  }
  forget(userId?: string): void {
    if (userId === undefined) this.entries.clear();
    else this.entries.delete(userId);
  }
}
export const accountCache = new AccountCache();

/**
 * Who a caller is in organization terms: their user record and organization, made on first use
 * (a keys-CLI user gets a personal organization; an OpenID person per SIGNUP_MODE). The authorizer
 * calls it on every request; records are held KEY_CACHE_SECONDS.
 *
 * Every change is a conditional single-item write; where two are needed the first leaves nothing
 * another request could misread (docs/data-model.md, "What a crash can leave").
 */
export class Accounts {
  constructor(
    private readonly store: AccountStore,
    private readonly audit: Audit,
    private readonly now: () => Date = () => new Date(),
    private readonly mode: () => SignupMode = () => signupMode(),
  ) {}

  /** The account of a user who holds an API key (or a session made from one): made with a personal organization on first use. */
  async forUser(userId: string): Promise<Account> {
    const held = accountCache.get(userId);
    if (held) return held;
    let account = await this.read(userId);
    if (!account) account = await this.createPersonal({ userId });
    accountCache.put(account);
    return account;
  }

  /**
   * The account of an OpenID person: an existing one, or a new one as SIGNUP_MODE allows (open: a
   * personal organization; invite: into the inviting organization, for an invited verified email;
   * closed: none). Throws SignInRefused.
   */
  async forPerson(claims: PersonClaims): Promise<Account> {
    const userId = personUserId(claims.issuer, claims.sub);
    const held = accountCache.get(userId);
    if (held) return held;
    let account = await this.read(userId);
    if (!account) {
      const mode = this.mode();
      const email = claims.emailVerified && claims.email ? claims.email.toLowerCase() : undefined;
      if (mode === 'closed') throw new SignInRefused('Sign-up is closed: only existing users can sign in');
      if (mode === 'invite') {
        account = await this.joinByInvitation(userId, claims, email);
        if (!account)
          throw new SignInRefused(
            email
              ? 'Sign-up is by invitation only, and there is no open invitation for this email'
              : 'Sign-up is by invitation only, and the issuer has not verified an email for this person',
          );
      } else {
        account = await this.createPersonal({ userId, claims, email });
      }
    } else if (
      account.user.status !== 'deleted' &&
      claims.emailVerified &&
      claims.email &&
      claims.email.toLowerCase() !== account.user.email
    ) {
      // The issuer vouches for a new email: keep the latest (invitations match it).
      const user = { ...account.user, email: claims.email.toLowerCase(), emailVerified: true };
      if (await this.store.replaceUser(user)) account = { ...account, user: { ...user, version: user.version + 1 } };
    }
    accountCache.put(account);
    return account;
  }

  /**
   * Places a new user in an existing organization (the keys CLI's `--org`: an operator's tool, run
   * with the deployment's credentials). A user who exists already is refused: people move by invitation.
   */
  async join(userId: string, orgId: string, role: Role, actor: string): Promise<Account> {
    const org = await this.store.getOrg(orgId);
    if (org?.status !== 'active') throw new Error(`No active organization ${orgId}`);
    const user = this.newUser(userId, orgId, role);
    if (!(await this.store.createUser(user)))
      throw new Error(`User ${userId} exists already: people change organization by invitation`);
    if (role === 'owner') await this.store.adjustOwners(orgId, 1, 1);
    await this.audit.record(orgId, actor, 'sign_up', { target: userId, detail: `added as ${role}` });
    return { user, org };
  }

  /** Whether the person is an operator: OPERATORS names their verified email or `<issuer>|<sub>`, or their Cognito group. */
  isOperator(user: UserRecord, groups: readonly string[] = []): boolean {
    if (!user.issuer || !user.sub) return false;
    if (groups.includes('operators')) return true;
    const entries = operatorEntries();
    if (entries.includes(`${user.issuer}|${user.sub}`)) return true;
    return !!(user.emailVerified && user.email && entries.includes(user.email));
  }

  forget(userId?: string): void {
    accountCache.forget(userId);
  }

  /** The user and their organization as stored now, or undefined for an unknown user. */
  async read(userId: string): Promise<Account | undefined> {
    const user = await this.store.getUser(userId);
    if (!user) return undefined;
    const org = await this.store.getOrg(user.orgId);
    if (!org) throw new Error(`User ${userId} names organization ${user.orgId}, which does not exist`);
    return { user, org };
  }

  /** A new organization owned by `userId` alone: `personalOrgId` for a first one, a fresh id otherwise. */
  async newPersonalOrg(userId: string, first: boolean): Promise<OrgRecord> {
    const at = this.now().toISOString();
    const org: OrgRecord = {
      orgId: first ? personalOrgId(userId) : newOrgId(),
      name: 'Personal',
      plan: DEFAULT_PLAN,
      status: 'active',
      personal: true,
      personalOf: userId,
      owners: 1,
      createdAt: at,
      updatedAt: at,
      version: 1,
    };
    if (await this.store.createOrg(org)) return org;
    // A first use retried after a crash, or racing itself: the organization made for this user is theirs.
    const existing = await this.store.getOrg(org.orgId);
    if (existing?.personalOf === userId) return existing;
    throw new Error(`Could not create a personal organization for ${userId}`);
  }

  private async createPersonal(input: { userId: string; claims?: PersonClaims; email?: string }): Promise<Account> {
    const org = await this.newPersonalOrg(input.userId, true);
    const user = this.newUser(input.userId, org.orgId, 'owner', input.claims, input.email);
    if (!(await this.store.createUser(user))) {
      // Another request made the user first: theirs stands.
      const account = await this.read(input.userId);
      if (account) return account;
      throw new Error(`Could not create user ${input.userId}`);
    }
    await this.audit.record(org.orgId, input.userId, 'sign_up', {
      target: input.userId,
      detail: 'personal organization',
    });
    return { user, org };
  }

  private async joinByInvitation(
    userId: string,
    claims: PersonClaims,
    email: string | undefined,
  ): Promise<Account | undefined> {
    if (!email) return undefined;
    const at = this.now().toISOString();
    const invitations = await this.store.listInvitationsByEmail(email);
    // One accepted by this person whose user was never written (a crash between the two writes) is theirs to finish.
    const mine = invitations.find((i) => i.acceptedBy === userId);
    let invitation = mine;
    if (!invitation) {
      for (const open of invitations.filter((i) => !i.acceptedAt && i.expiresAt > at)) {
        if (await this.store.acceptInvitation(open.tokenHash, userId, at)) {
          invitation = open;
          break;
        }
      }
    }
    if (!invitation) return undefined;
    const org = await this.store.getOrg(invitation.orgId);
    if (!org || org.status === 'closed') return undefined;
    const user = this.newUser(userId, org.orgId, invitation.role, claims, email);
    if (!(await this.store.createUser(user))) return this.read(userId);
    if (invitation.role === 'owner') await this.store.adjustOwners(org.orgId, 1, 1);
    await this.audit.record(org.orgId, userId, 'sign_up', { target: userId, detail: `invited as ${invitation.role}` });
    await this.audit.record(org.orgId, userId, 'invitation_accepted', {
      target: invitation.tokenHash.slice(0, 12),
      detail: invitation.role,
    });
    return { user, org };
  }

  private newUser(userId: string, orgId: string, role: Role, claims?: PersonClaims, email?: string): UserRecord {
    const at = this.now().toISOString();
    return {
      userId,
      orgId,
      role,
      status: 'active',
      ...(claims ? { issuer: claims.issuer, sub: claims.sub } : {}),
      ...(email ? { email, emailVerified: true } : {}),
      createdAt: at,
      updatedAt: at,
      version: 1,
    };
  }
}
