import { randomBytes, timingSafeEqual } from 'node:crypto';
import { hashKey, type ApiKeys } from '#shared/auth/api-keys.ts';
import type { Principal } from '#shared/auth/model.ts';
import type { SessionStore } from '#shared/auth/session-store.ts';
import { callerScheme, originVerdict, selfOrigins } from '#shared/http/cors.ts';

/**
 * The cookie that carries a browser session. Over https it is `__Host-acs_session`: browsers accept
 * that name only with Secure, Path=/ and no Domain, so a sibling subdomain cannot plant a session of
 * its own choosing (cookie tossing). Over plain http (local) it is `acs_session_<port>`: browsers do
 * not isolate cookies by port, so one name for every local service would let a page on another port
 * of 127.0.0.1 (any sandbox can serve one) overwrite or read past this one. A page on another port
 * can still write a cookie of this name; such a planted cookie beside the user's own makes two, and a
 * request with more than one session cookie is refused (`sessionCookieValues`), so the victim's
 * console never runs as someone else once its user has signed in (docs/architecture.md#sessions-on-plain-http).
 */
export const sessionCookieName = (secure: boolean, port = '80') =>
  secure ? '__Host-acs_session' : `acs_session_${port}`;

/** The port of a base URL or Host header value (`80` when it names none). */
export function portOf(hostOrUrl: string | undefined): string {
  if (!hostOrUrl) return '80';
  try {
    return new URL(hostOrUrl.includes('://') ? hostOrUrl : `http://${hostOrUrl}`).port || '80';
  } catch {
    return '80';
  }
}

/**
 * Whether the caller reached the API over https (`PUBLIC_BASE_URL` decides when it is set, as for
 * links): the wrapper's rule, so the cookie the sign-in sets is the one the authorizer reads.
 */
export function servedOverHttps(
  headers: Record<string, string | undefined>,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  return env.PUBLIC_BASE_URL ? env.PUBLIC_BASE_URL.startsWith('https:') : callerScheme(headers) === 'https';
}

/** The session cookie's name for how this request was served (its port from `PUBLIC_BASE_URL` or Host). */
export function requestCookieName(headers: Record<string, string | undefined>, env: NodeJS.ProcessEnv = process.env) {
  return sessionCookieName(servedOverHttps(headers, env), portOf(env.PUBLIC_BASE_URL || headers.host));
}

/** Every value of the session cookie the request carries (more than one: a planted cookie beside the real one). */
export function sessionCookieValues(
  headers: Record<string, string | undefined>,
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  return cookieValues(headers.cookie, requestCookieName(headers, env));
}

/** The session token a request carries; undefined with none or with more than one (ambiguous: never pick one). */
export function sessionToken(
  headers: Record<string, string | undefined>,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const values = sessionCookieValues(headers, env);
  return values.length === 1 ? values[0] : undefined;
}
const TOKEN_PATTERN = /^acss_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;

/** How long a session lasts: `SESSION_HOURS` (default 12, at most a week). */
export function sessionSeconds(env: NodeJS.ProcessEnv = process.env): number {
  const hours = env.SESSION_HOURS === undefined || env.SESSION_HOURS === '' ? 12 : Number(env.SESSION_HOURS);
  if (!Number.isFinite(hours) || hours <= 0 || hours > 168)
    throw new Error('Configuration error: SESSION_HOURS must be a number of hours above 0 and at most 168');
  return Math.round(hours * 3600);
}

/**
 * Browser sign-in: an API key is exchanged for a session token carried in an HttpOnly cookie. Only
 * the token's SHA-256 is stored, with its expiry; a session ends at that time, at sign-out, or
 * when the API key it was made from is revoked.
 */
export class Sessions {
  constructor(
    private readonly store: SessionStore,
    private readonly apiKeys: ApiKeys,
    private readonly lifetimeSeconds: () => number,
    private readonly now: () => Date = () => new Date(),
    /** The allowed browser origins, read when a cookie write is checked (`mayWriteCookie`). */
    private readonly origins: () => readonly string[] = () => [],
  ) {}

  /**
   * Whether a request may change the session cookie it carries (sign-out): without one, yes; with one,
   * only from an allowed Origin or this API's own, like every write signed in with the cookie.
   */
  mayWriteCookie(headers: Record<string, string | undefined>): boolean {
    if (sessionCookieValues(headers).length === 0) return true;
    return originVerdict('POST', headers, this.origins(), selfOrigins(headers)) === 'verified';
  }

  /** A new session for the holder of an API key; the token is returned once. */
  async create(userId: string, keyId?: string): Promise<{ token: string; expiresAt: string; maxAgeSeconds: number }> {
    const sessionId = randomBytes(16).toString('hex');
    const token = `acss_${sessionId}_${randomBytes(32).toString('base64url')}`;
    const maxAgeSeconds = this.lifetimeSeconds();
    const now = this.now();
    const expiresAt = new Date(now.getTime() + maxAgeSeconds * 1000).toISOString();
    await this.store.create({
      sessionId,
      userId,
      keyId,
      hash: hashKey(token),
      createdAt: now.toISOString(),
      expiresAt,
    });
    return { token, expiresAt, maxAgeSeconds };
  }

  /** The session's user, or null for a malformed, unknown, expired or ended session. */
  async authenticate(token: string | undefined): Promise<Principal | null> {
    const found = await this.find(token);
    // A session made from a key lives as long as the key; one from an OpenID sign-in until it expires.
    if (!found || (found.keyId && !(await this.apiKeys.isActive(found.keyId)))) return null;
    return {
      via: 'session',
      userId: found.userId,
      ...(found.keyId ? { keyId: found.keyId } : {}),
      sessionId: found.sessionId,
      issuedAt: found.createdAt,
    };
  }

  /** Ends the session the token belongs to (sign-out); false when there was none. */
  async end(token: string | undefined): Promise<boolean> {
    const found = await this.find(token);
    if (!found) return false;
    await this.store.delete(found.sessionId);
    return true;
  }

  private async find(token: string | undefined) {
    const match = token ? TOKEN_PATTERN.exec(token) : null;
    if (!token || !match) return null;
    const record = await this.store.get(match[1]!);
    if (!record || Date.parse(record.expiresAt) <= this.now().getTime()) return null;
    const expected = Buffer.from(record.hash, 'hex');
    const actual = Buffer.from(hashKey(token), 'hex');
    return expected.length === actual.length && timingSafeEqual(expected, actual) ? record : null;
  }
}

/** Every value of cookie `name` in a Cookie header (browsers send one per path and domain that matched). */
export function cookieValues(header: string | undefined, name: string): string[] {
  const out: string[] = [];
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) out.push(part.slice(eq + 1).trim());
  }
  return out;
}

/** The Set-Cookie header for a session token (or, with `null`, one that removes the cookie). */
export function sessionCookie(token: string | null, maxAgeSeconds: number, secure: boolean, port = '80'): string {
  const attributes = [
    `${sessionCookieName(secure, port)}=${token ?? ''}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${token ? maxAgeSeconds : 0}`,
  ];
  if (secure) attributes.push('Secure');
  return attributes.join('; ');
}
