import { type StreamRequest, USER_KEY } from '#shared/stream/access.ts';

/*
 * First-message authentication, as the OpenHands agent server does it and Agent Canvas uses it: a
 * client that puts no credential in the URL or the handshake's headers opens the socket, then sends
 * `{"type": "auth", "session_api_key": "<key>"}` as its first frame (keys stay out of URLs and logs).
 * The key is then judged exactly as if it had come in `X-Session-API-Key` (a conversation key for
 * its own conversation, or the user's API key). Kept apart from the socket code so the local socket
 * and the AWS `$default` function share it.
 */

/** How long an unauthenticated socket may stay open waiting for its auth frame (the agent server's 10 s). */
export const FIRST_MESSAGE_AUTH_MS = 10_000;

/** The close code of a failed first-message auth (the agent server's; OpenHands clients treat it as fatal). */
export const AUTH_FAILED_CLOSE = 4001;
export const AUTH_FAILED_REASON = 'Authentication failed';

/** The header names any HTTP credential comes in (a key, a bearer token, the session cookie). */
const CREDENTIAL_HEADERS = ['x-session-api-key', 'authorization', 'cookie'] as const;

/**
 * Whether the handshake carries a credential of any kind; one that carries none waits for its auth
 * frame. One that carries a credential is judged at once as before (a bad one still closes 4401/4403).
 */
export function carriesCredentials(request: Pick<StreamRequest, 'query' | 'headers'>): boolean {
  if (request.query.ticket !== undefined || request.query.session_api_key !== undefined) return true;
  // A user key anywhere in the URL is judged (and refused) at once, never left waiting.
  if (Object.values(request.query).some((v) => v !== undefined && USER_KEY.test(v))) return true;
  const lower = new Set(Object.keys(request.headers).map((k) => k.toLowerCase()));
  return CREDENTIAL_HEADERS.some((h) => lower.has(h) && request.headers[h]?.trim());
}

/** Whether a parsed frame is an auth control frame (`{"type": "auth", ...}`): after the socket opened, one is ignored, as the agent server does. */
export function isAuthFrame(raw: unknown): boolean {
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw) && (raw as { type?: unknown }).type === 'auth';
}

/** The key of a first frame when it is a well-formed auth frame (a non-empty string of at most 512 characters); null otherwise. */
export function authKeyOf(text: string): string | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isAuthFrame(raw)) return null;
  const key = (raw as { session_api_key?: unknown }).session_api_key;
  return typeof key === 'string' && key.trim() !== '' && key.length <= 512 ? key.trim() : null;
}

/** The request as judged with the frame's key: the key as a header (so re-checks of an open stream judge it the same way). */
export function withAuthKey(request: StreamRequest, key: string): StreamRequest {
  return { ...request, headers: { ...request.headers, 'x-session-api-key': key } };
}
