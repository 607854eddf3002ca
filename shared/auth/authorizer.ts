import { SignInRefused, type Account, type Accounts } from '#shared/accounts/accounts.ts';
import { keyFromHeaders, type ApiKeys } from '#shared/auth/api-keys.ts';
import { isConversationKey, type ConversationKeys } from '#shared/auth/conversation-keys.ts';
import { isJwtForm, TokenRefused, type OidcVerifier } from '#shared/auth/oidc.ts';
import { sessionCookieValues, type Sessions } from '#shared/auth/sessions.ts';
import { requestRate } from '#shared/auth/request-rate.ts';
import {
  type RateLimiter,
  SIGN_IN_PER_IP_PER_MINUTE,
  SIGN_IN_PER_IP_REFUSAL,
  SIGN_IN_WINDOW_SECONDS,
  secondsLeftInWindow,
} from '#shared/auth/rate-limit.ts';
import { originVerdict, selfOrigins } from '#shared/http/cors.ts';
import type { Plans } from '#shared/plans/model.ts';

export interface AuthDeps {
  apiKeys: ApiKeys;
  sessions: Sessions;
  conversationKeys: ConversationKeys;
  /** People and organizations: the caller's organization, role and status (made on first use). */
  accounts: Accounts;
  /** The configured OpenID issuer's verifier; null when none is configured (keys only). */
  oidc: OidcVerifier | null;
  /** The explicitly allowed browser origins (`CORS_ORIGINS`). */
  allowedOrigins: readonly string[];
  /** The plans, where the caller's `requests_per_user_per_minute` is enforced (HTTP routes; stream opens take it in shared/stream/access.ts). */
  plans?: Plans;
  /** The per-address counters (in the keys table): needed for a request given `limitedAddress`. */
  addressLimiter?: RateLimiter;
}

/**
 * What the authorizer hands the route (API Gateway's context values are strings, numbers or
 * booleans). `userId` empty: no valid credentials, and `refusal` says why when it is not plain 401.
 */
export interface AuthorizerContext {
  userId: string;
  via?: 'key' | 'session' | 'conversation' | 'token';
  /** The API key used (directly, or to make the session). */
  keyId?: string;
  /** For a conversation-scoped key: the one conversation it is valid for. */
  conversationId?: string;
  /** For a session: whether the request carried an allowed Origin (routes that manage credentials require it). */
  originVerified?: boolean;
  /** The caller's organization and role in it. */
  orgId?: string;
  /** The organization's plan (a name in the plans; shared/plans). */
  plan?: string;
  role?: string;
  /** The verified email the issuer vouched for, if any. */
  email?: string;
  /** An operator of the service (OPERATORS, or the Cognito group `operators`). */
  operator?: boolean;
  refusal?: string;
  /** 401 for a refused token or a suspended account, 429 over the plan's request rate; otherwise a refusal is a 403. */
  refusalStatus?: 401 | 403 | 429;
  /** With a 429: the seconds until a request is allowed again. */
  retryAfter?: number;
}

export const CROSS_SITE_REFUSAL =
  'Cross-site request refused: a request signed in with the session cookie must come from an allowed origin';
export const SUSPENDED_USER = 'This account is suspended';
export const SUSPENDED_ORG = "This account's organization is suspended";
export const DELETED_USER = 'This account was deleted';

const refused = (refusal: string): AuthorizerContext => ({ userId: '', refusal, refusalStatus: 401 });

/**
 * A request with two session cookies: one was planted (a page on another port of a local host can
 * write cookies for it; browsers send every match). Never pick one: the wrong one would run the
 * user's console, and what they type into it, in someone else's account.
 */
export const SEVERAL_SESSIONS_REFUSAL =
  "More than one session cookie: sign out (which clears this site's cookies) and sign in again";

/**
 * The authorizer's decision for a request. A Bearer value (or `X-Session-API-Key`) is told apart by
 * its form: `acsc.` a conversation-scoped key, `acs_` an API key, three dot-separated parts a JWT
 * (an access token of the configured OpenID issuer); without one, the session cookie, which counts
 * only on requests from an allowed page (see `originVerdict`). Then the caller's account: a
 * suspended user or organization is refused, and so are keys and sessions made before the person
 * last left an organization. The Lambda authorizer and the local gateway both call this.
 *
 * `limitedAddress`: the caller's address (`clientAddress`), on a route declared `limitedPerAddress`
 * (`POST /api/authenticate`, which anyone may call with any key): the attempt is counted there first,
 * before any credential is read, so refused keys count too, and past SIGN_IN_PER_IP_PER_MINUTE it is
 * refused (429) without a key lookup.
 */
export async function authorizeRequest(
  method: string,
  rawHeaders: Record<string, string | undefined>,
  deps: AuthDeps,
  limitedAddress?: string,
): Promise<AuthorizerContext> {
  if (limitedAddress !== undefined) {
    if (!deps.addressLimiter) throw new Error('A route limited per address needs the authorizer its addressLimiter');
    if (
      !(await deps.addressLimiter.take(
        `authenticate-ip:${limitedAddress}`,
        SIGN_IN_PER_IP_PER_MINUTE,
        SIGN_IN_WINDOW_SECONDS,
      ))
    )
      return {
        userId: '',
        refusal: SIGN_IN_PER_IP_REFUSAL,
        refusalStatus: 429,
        retryAfter: secondsLeftInWindow(SIGN_IN_WINDOW_SECONDS),
      };
  }
  const headers: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(rawHeaders)) headers[k.toLowerCase()] = v;
  const key = keyFromHeaders(headers);
  if (key && isConversationKey(key)) {
    const claim = await deps.conversationKeys.verify(key);
    if (!claim) return { userId: '' };
    return withAccount(
      { userId: claim.userId, via: 'conversation', conversationId: claim.conversationId },
      await deps.accounts.forUser(claim.userId),
      undefined,
      deps,
    );
  }
  if (key?.startsWith('acs_')) {
    const principal = await deps.apiKeys.authenticate(key);
    if (principal?.via !== 'key') return { userId: '' };
    return withAccount(
      { userId: principal.userId, via: 'key', keyId: principal.keyId },
      await deps.accounts.forUser(principal.userId),
      principal.issuedAt,
      deps,
    );
  }
  if (key && isJwtForm(key)) {
    if (!deps.oidc) return refused('Bearer tokens are not accepted here: no OpenID issuer is configured');
    try {
      const claims = await deps.oidc.verifyAccessToken(key);
      const account = await deps.accounts.forPerson({
        issuer: deps.oidc.config.issuer,
        sub: claims.sub!,
        email: typeof claims.email === 'string' ? claims.email : undefined,
        emailVerified: claims.email_verified === true,
      });
      const groups = Array.isArray(claims['cognito:groups']) ? (claims['cognito:groups'] as string[]) : [];
      return withAccount({ userId: account.user.userId, via: 'token' }, account, undefined, deps, groups);
    } catch (err) {
      if (err instanceof TokenRefused || err instanceof SignInRefused) return refused(err.message);
      throw err;
    }
  }
  if (key) return { userId: '' };
  const tokens = sessionCookieValues(headers);
  if (tokens.length > 1) return { userId: '', refusal: SEVERAL_SESSIONS_REFUSAL };
  const token = tokens[0];
  if (!token) return { userId: '' };
  const principal = await deps.sessions.authenticate(token);
  if (principal?.via !== 'session') return { userId: '' };
  const verdict = originVerdict(method.toUpperCase(), headers, deps.allowedOrigins, selfOrigins(headers));
  if (verdict === 'refused') return { userId: '', refusal: CROSS_SITE_REFUSAL };
  return withAccount(
    {
      userId: principal.userId,
      via: 'session',
      ...(principal.keyId ? { keyId: principal.keyId } : {}),
      originVerified: verdict === 'verified',
    },
    await deps.accounts.forUser(principal.userId),
    principal.issuedAt,
    deps,
  );
}

/** The context with the caller's organization, or a refusal for a suspended or departed account. */
function withAccount(
  context: AuthorizerContext,
  { user, org }: Account,
  issuedAt: string | undefined,
  deps: AuthDeps,
  groups: readonly string[] = [],
): AuthorizerContext {
  if (user.status === 'suspended') return refused(SUSPENDED_USER);
  if (user.status === 'deleted') return refused(DELETED_USER);
  if (org.status === 'suspended') return refused(SUSPENDED_ORG);
  // Keys and sessions end when their person leaves or is removed from an organization.
  if (issuedAt && user.credentialsNotBefore && issuedAt < user.credentialsNotBefore) return { userId: '' };
  if (deps.plans) {
    const perMinute = deps.plans.plan(org.plan).requests_per_user_per_minute;
    const retryAfter = requestRate.take(user.userId, perMinute);
    if (retryAfter !== undefined)
      return {
        userId: '',
        refusal: `Too many requests: your plan allows ${perMinute} per minute`,
        refusalStatus: 429,
        retryAfter,
      };
  }
  return {
    ...context,
    orgId: org.orgId,
    plan: org.plan,
    role: user.role,
    ...(user.email ? { email: user.email } : {}),
    operator: deps.accounts.isOperator(user, groups),
  };
}
