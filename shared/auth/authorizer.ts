import { keyFromHeaders, type ApiKeys } from '#shared/auth/api-keys.ts';
import { isConversationKey, type ConversationKeys } from '#shared/auth/conversation-keys.ts';
import type { Principal } from '#shared/auth/model.ts';
import { sessionCookieValues, type Sessions } from '#shared/auth/sessions.ts';
import { originVerdict, selfOrigins } from '#shared/http/cors.ts';

export interface AuthDeps {
  apiKeys: ApiKeys;
  sessions: Sessions;
  conversationKeys: ConversationKeys;
  /** The explicitly allowed browser origins (`CORS_ORIGINS`). */
  allowedOrigins: readonly string[];
}

/**
 * What the authorizer hands the route (API Gateway's context values are strings, numbers or
 * booleans). `userId` empty: no valid credentials, and `refusal` says why when it is not plain 401.
 */
export interface AuthorizerContext {
  userId: string;
  via?: Principal['via'];
  /** The API key used (directly, or to make the session). */
  keyId?: string;
  /** For a conversation-scoped key: the one conversation it is valid for. */
  conversationId?: string;
  /** For a session: whether the request carried an allowed Origin (routes that manage credentials require it). */
  originVerified?: boolean;
  refusal?: string;
}

export const CROSS_SITE_REFUSAL =
  'Cross-site request refused: a request signed in with the session cookie must come from an allowed origin';

/**
 * A request with two session cookies: one was planted (a page on another port of a local host can
 * write cookies for it; browsers send every match). Never pick one: the wrong one would run the
 * user's console, and what they type into it, in someone else's account.
 */
export const SEVERAL_SESSIONS_REFUSAL =
  "More than one session cookie: sign out (which clears this site's cookies) and sign in again";

/**
 * The authorizer's decision for a request: an API key (`X-Session-API-Key` or `Authorization:
 * Bearer`), a conversation-scoped key in the same headers, or else the session cookie, which counts
 * only on requests from an allowed page (see `originVerdict`). The Lambda authorizer and the local
 * gateway both call this, so they cannot disagree.
 */
export async function authorizeRequest(
  method: string,
  rawHeaders: Record<string, string | undefined>,
  deps: AuthDeps,
): Promise<AuthorizerContext> {
  const headers: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(rawHeaders)) headers[k.toLowerCase()] = v;
  const key = keyFromHeaders(headers);
  if (key && isConversationKey(key)) {
    const claim = await deps.conversationKeys.verify(key);
    return claim ? { userId: claim.userId, via: 'conversation', conversationId: claim.conversationId } : { userId: '' };
  }
  if (key) {
    const principal = await deps.apiKeys.authenticate(key);
    return principal?.via === 'key' ? { userId: principal.userId, via: 'key', keyId: principal.keyId } : { userId: '' };
  }
  const tokens = sessionCookieValues(headers);
  if (tokens.length > 1) return { userId: '', refusal: SEVERAL_SESSIONS_REFUSAL };
  const token = tokens[0];
  if (!token) return { userId: '' };
  const principal = await deps.sessions.authenticate(token);
  if (principal?.via !== 'session') return { userId: '' };
  const verdict = originVerdict(method.toUpperCase(), headers, deps.allowedOrigins, selfOrigins(headers));
  if (verdict === 'refused') return { userId: '', refusal: CROSS_SITE_REFUSAL };
  return { userId: principal.userId, via: 'session', keyId: principal.keyId, originVerified: verdict === 'verified' };
}
