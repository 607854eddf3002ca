import * as z from '#shared/zod.ts';

/**
 * The request headers a browser client may send (CORS), here and on API Gateway: ours, and what
 * OpenHands' own clients send on every request (Agent Canvas 1.20: `X-OpenHands-Client`,
 * `X-OpenHands-Client-Version`, `X-OpenHands-Telemetry-Distinct-Id`, `X-Org-Id`, and
 * `X-Expose-Secrets` on settings reads, which exposes nothing here: secrets are never returned).
 */
export const CORS_ALLOW_HEADERS = [
  'content-type',
  'x-session-api-key',
  'authorization',
  'x-openhands-client',
  'x-openhands-client-version',
  'x-openhands-telemetry-distinct-id',
  'x-org-id',
  'x-expose-secrets',
  'idempotency-key',
];
export const CORS_ALLOW_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
/** Readable by a browser client: idempotent creates' replay mark, and when to retry a 429 or an in-progress 409. */
export const CORS_EXPOSE_HEADERS = ['x-request-id', 'x-paused-sandbox-ids', 'idempotent-replayed', 'retry-after'];
export const CORS_MAX_AGE_SECONDS = 3600;

const origin = z.union([
  z.literal('*'),
  z.url({ protocol: /^https?$/ }).check(z.regex(/^https?:\/\/[^/]+$/, 'an origin: scheme and host, no path')),
]);

/**
 * The browser origins allowed by CORS: `CORS_ORIGINS`, comma-separated (`*` for any; empty: none).
 * Checked once with the bad entry named. Locally the gateway reads it; on AWS the CDK config key
 * `corsAllowedOrigins` configures API Gateway and reaches the authorizer as this variable.
 */
export function allowedOrigins(env: NodeJS.ProcessEnv = process.env): readonly string[] {
  const list = (env.CORS_ORIGINS ?? '')
    .split(',')
    .map((o) => o.trim().replace(/\/+$/, ''))
    .filter(Boolean);
  for (const entry of list) {
    const parsed = origin.safeParse(entry);
    if (!parsed.success)
      throw new Error(
        `Configuration error: CORS_ORIGINS: "${entry}" is not ${parsed.error.issues[0]!.message === 'Invalid URL' ? 'an origin' : parsed.error.issues[0]!.message}`,
      );
  }
  return list;
}

/** The CORS headers for a request from `requestOrigin`: none when that origin is not allowed. */
export function corsHeaders(
  requestOrigin: string | undefined,
  allowed: readonly string[],
  preflight: boolean,
): Record<string, string> {
  if (!requestOrigin) return {};
  const explicit = allowed.includes(requestOrigin);
  if (!explicit && !allowed.includes('*')) return {};
  const headers: Record<string, string> = {
    'access-control-allow-origin': requestOrigin,
    vary: 'Origin',
    'access-control-expose-headers': CORS_EXPOSE_HEADERS.join(', '),
  };
  // Cookies only for origins named one by one: `*` lets any site read, never with credentials.
  if (explicit) headers['access-control-allow-credentials'] = 'true';
  if (preflight) {
    headers['access-control-allow-methods'] = CORS_ALLOW_METHODS.join(', ');
    headers['access-control-allow-headers'] = CORS_ALLOW_HEADERS.join(', ');
    headers['access-control-max-age'] = String(CORS_MAX_AGE_SECONDS);
  }
  return headers;
}

/**
 * Whether a cookie-authenticated request comes from a page we trust: its Origin is one of the
 * explicitly allowed origins (never `*`) or this API's own origin. A request without an Origin
 * counts only when it is a read the browser marks same-origin (`Sec-Fetch-Site`): browsers send
 * Origin on every cross-origin request and on every same-origin write.
 */
export function originVerdict(
  method: string,
  headers: Record<string, string | undefined>,
  allowed: readonly string[],
  selfOrigins: readonly string[],
): 'verified' | 'same-origin-read' | 'refused' {
  const requestOrigin = headers.origin;
  if (requestOrigin)
    return requestOrigin !== '*' && (allowed.includes(requestOrigin) || selfOrigins.includes(requestOrigin))
      ? 'verified'
      : 'refused';
  const read = method === 'GET' || method === 'HEAD';
  return read && headers['sec-fetch-site'] === 'same-origin' ? 'same-origin-read' : 'refused';
}

/**
 * The scheme the caller used: `x-forwarded-proto`, which API Gateway and the local gateway set, else
 * https. The one rule for base URLs, own origins and the session cookie's name, so they never disagree.
 */
export const callerScheme = (headers: Record<string, string | undefined>): string =>
  headers['x-forwarded-proto'] ?? 'https';

/** This API's own origins: as the caller reached it (proto + Host) and `PUBLIC_BASE_URL`. */
export function selfOrigins(
  headers: Record<string, string | undefined>,
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  const out: string[] = [];
  if (headers.host) out.push(`${callerScheme(headers)}://${headers.host}`);
  if (env.PUBLIC_BASE_URL) out.push(new URL(env.PUBLIC_BASE_URL).origin);
  return out;
}
