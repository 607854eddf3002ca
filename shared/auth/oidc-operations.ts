import { createHash, randomBytes } from 'node:crypto';
import * as z from '#shared/zod.ts';
import { type Accounts, personUserId, SignInRefused } from '#shared/accounts/accounts.ts';
import type { Audit } from '#shared/accounts/audit.ts';
import { DELETED_USER, SUSPENDED_ORG, SUSPENDED_USER } from '#shared/auth/authorizer.ts';
import { TokenRefused } from '#shared/auth/oidc.ts';
import {
  type RateLimiter,
  SIGN_IN_PER_ACCOUNT_PER_MINUTE,
  SIGN_IN_PER_IP_PER_MINUTE,
  SIGN_IN_PER_IP_REFUSAL,
  SIGN_IN_REFUSED_AUDITS_PER_MINUTE,
  SIGN_IN_WINDOW_SECONDS,
  secondsLeftInWindow,
} from '#shared/auth/rate-limit.ts';
import { logger } from '#shared/logging.ts';
import { cookieValues, portOf, sessionCookie } from '#shared/auth/sessions.ts';
import { allowedOrigins, originVerdict, selfOrigins } from '#shared/http/cors.ts';
import { ApiError, forbidden, notFound, tooManyRequests, unauthorized } from '#shared/http/errors.ts';
import { defineOperation, Reply } from '#shared/http/operation.ts';

/**
 * The console's OpenID sign-in (authorization code + PKCE in the page, a public client: no secret):
 * 1. `POST /api/auth/oidc/start` sets an HttpOnly, SameSite=Strict cookie holding a random secret and
 *    answers the issuer's endpoints, the client id and `nonce` = SHA-256 of that secret;
 * 2. the page sends the person to the issuer with its own `state` and PKCE verifier (kept in
 *    sessionStorage) and that nonce; back at `/auth/callback` it checks `state` and redeems the code
 *    at the token endpoint;
 * 3. `POST /api/auth/oidc/session` with the ID token: its signature, issuer, audience (the client
 *    id) and `nonce` (against this browser's cookie) are checked, and the request must carry an
 *    allowed Origin. So another site cannot sign a victim in as the attacker (login CSRF): it has
 *    neither the victim's nonce cookie nor an allowed Origin. The answer sets the session cookie.
 */
const NONCE_COOKIE = (secure: boolean) => (secure ? '__Host-acs_oidc_nonce' : 'acs_oidc_nonce');
const nonceOf = (secret: string) => createHash('sha256').update(secret).digest('base64url');
const nonceCookie = (value: string | null, secure: boolean) =>
  [
    `${NONCE_COOKIE(secure)}=${value ?? ''}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${value ? 600 : 0}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ');

export const oidcStart = defineOperation(
  'oidcStart',
  () => ({
    response: z.object({
      issuer: z.string(),
      client_id: z.string(),
      authorization_endpoint: z.string(),
      token_endpoint: z.string(),
      end_session_endpoint: z.nullable(z.string()),
      redirect_uri: z.string(),
      nonce: z.string(),
    }),
  }),
  async ({ baseUrl }, { oidcSignIn }) => {
    const oidc = oidcSignIn.verifier;
    if (!oidc) throw notFound('Sign-in with OpenID is not configured here (OIDC_ISSUER): sign in with an API key');
    const meta = await oidc.metadata().catch(() => {
      throw new ApiError(503, { detail: 'The OpenID issuer cannot be reached' });
    });
    if (!meta.authorization_endpoint || !meta.token_endpoint)
      throw new ApiError(503, { detail: 'The OpenID issuer names no authorization or token endpoint' });
    const secret = randomBytes(32).toString('base64url');
    const secure = baseUrl.startsWith('https:');
    return new Reply(
      200,
      {
        issuer: oidc.config.issuer,
        client_id: oidc.config.clientId,
        authorization_endpoint: meta.authorization_endpoint,
        token_endpoint: meta.token_endpoint,
        end_session_endpoint: meta.end_session_endpoint ?? null,
        redirect_uri: `${baseUrl}/auth/callback`,
        nonce: nonceOf(secret),
      },
      { 'set-cookie': nonceCookie(secret, secure), 'cache-control': 'no-store' },
    );
  },
);

export const oidcSession = defineOperation(
  'oidcSession',
  () => ({
    body: z.strictObject({ id_token: z.string().check(z.minLength(1), z.maxLength(16_384)) }),
    response: z.object({ success: z.literal(true), user_id: z.string(), expires_at: z.string() }),
  }),
  async ({ body, headers, baseUrl, clientAddress: ip }, { oidcSignIn, accounts, sessions, audit }) => {
    const oidc = oidcSignIn.verifier;
    if (!oidc) throw notFound('Sign-in with OpenID is not configured here (OIDC_ISSUER)');
    if (originVerdict('POST', headers, allowedOrigins(), selfOrigins(headers)) !== 'verified')
      throw forbidden('Sign-in must come from an allowed origin (the Origin header)');
    if (!(await oidcSignIn.limiter.take(`signin-ip:${ip}`, SIGN_IN_PER_IP_PER_MINUTE, SIGN_IN_WINDOW_SECONDS)))
      throw tooManyRequests(SIGN_IN_PER_IP_REFUSAL, secondsLeftInWindow(SIGN_IN_WINDOW_SECONDS));
    const secure = baseUrl.startsWith('https:');
    // Exactly one: a second one was planted (as with session cookies), and neither is picked.
    const nonces = cookieValues(headers.cookie, NONCE_COOKIE(secure));
    const secret = nonces.length === 1 ? nonces[0] : undefined;
    if (!secret) throw unauthorized('Sign-in refused: no sign-in in progress in this browser (start again)');
    let claims: Awaited<ReturnType<typeof oidc.verifyIdToken>>;
    try {
      claims = await oidc.verifyIdToken(body.id_token, nonceOf(secret));
    } catch (err) {
      if (err instanceof TokenRefused) throw unauthorized(`Sign-in refused: ${err.message}`);
      throw err;
    }
    const userId = personUserId(oidc.config.issuer, claims.sub!);
    const refuse = async (error: ApiError, reason: string, known?: { org: { orgId: string } }) => {
      await auditRefusal({ limiter: oidcSignIn.limiter, accounts, audit }, userId, reason, known);
      return error;
    };
    if (
      !(await oidcSignIn.limiter.take(
        `signin-account:${userId}`,
        SIGN_IN_PER_ACCOUNT_PER_MINUTE,
        SIGN_IN_WINDOW_SECONDS,
      ))
    )
      throw await refuse(
        tooManyRequests(
          'Too many sign-ins for this account: wait a minute',
          secondsLeftInWindow(SIGN_IN_WINDOW_SECONDS),
        ),
        'too many sign-ins for this account',
      );
    let account: Awaited<ReturnType<typeof accounts.forPerson>>;
    try {
      account = await accounts.forPerson({
        issuer: oidc.config.issuer,
        sub: claims.sub!,
        email: typeof claims.email === 'string' ? claims.email : undefined,
        emailVerified: claims.email_verified === true,
      });
    } catch (err) {
      if (err instanceof SignInRefused) throw unauthorized(`Sign-in refused: ${err.message}`);
      throw err;
    }
    if (account.user.status === 'deleted') throw await refuse(unauthorized(DELETED_USER), 'account deleted', account);
    if (account.user.status !== 'active')
      throw await refuse(unauthorized(SUSPENDED_USER), 'account suspended', account);
    if (account.org.status !== 'active')
      throw await refuse(unauthorized(SUSPENDED_ORG), `organization ${account.org.status}`, account);
    const session = await sessions.create(account.user.userId);
    await audit.record(account.org.orgId, account.user.userId, 'sign_in', { detail: 'openid' });
    return new Reply(
      200,
      { success: true, user_id: account.user.userId, expires_at: session.expiresAt },
      {
        'set-cookie': sessionCookie(session.token, session.maxAgeSeconds, secure, portOf(baseUrl)),
        // The nonce is spent.
        'cache-control': 'no-store',
      },
    );
  },
);

/**
 * `sign_in_refused` in the person's organization's audit log, for a verified ID token of a known
 * person (a user record exists for its issuer and subject) refused anyway: suspended, deleted, their
 * organization suspended or closed, or over the per-account limit. Only the reason, never the token.
 * At most SIGN_IN_REFUSED_AUDITS_PER_MINUTE per person per minute (a counter of the sign-in limiter,
 * taken before anything is read), so a flood of refusals cannot fill the log. An unverified token names
 * nobody for certain, and an unknown person has no organization: neither is written (docs/sign-in.md).
 * A failure here never changes the refusal.
 */
async function auditRefusal(
  deps: { limiter: RateLimiter; accounts: Pick<Accounts, 'read'>; audit: Pick<Audit, 'record'> },
  userId: string,
  reason: string,
  /** The account when the refusal read it already. */
  known?: { org: { orgId: string } },
): Promise<void> {
  try {
    if (
      !(await deps.limiter.take(
        `signin-refused-audit:${userId}`,
        SIGN_IN_REFUSED_AUDITS_PER_MINUTE,
        SIGN_IN_WINDOW_SECONDS,
      ))
    )
      return;
    const account = known ?? (await deps.accounts.read(userId));
    if (!account) return;
    await deps.audit.record(account.org.orgId, userId, 'sign_in_refused', { target: userId, detail: reason });
  } catch (err) {
    logger.warn('signin.refusal_not_audited', { userId, error: err as Error });
  }
}
