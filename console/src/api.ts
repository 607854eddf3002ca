import type { Schema } from '../../shared/client/index.ts';

/**
 * The console's only way to the API: same origin, the session cookie (HttpOnly, so this page never
 * sees it), JSON in and out. Errors become an `ApiFailure` with the server's message and, for a 422,
 * one message per field so a form can show each next to its input.
 */

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** 422: messages by field path (`llm_base_url`, `mcp_config.sse_servers.0.url`), without the `body`/`query` prefix. */
    readonly fields: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** One entry of a 422 (the document's ValidationError). */
type Issue = Partial<Schema<'ValidationError'>['detail'][number]>;

/** Called when a request comes back 401: the session ended (expired, revoked, signed out elsewhere). */
let onSignedOut: () => void = () => {};
export const whenSignedOut = (fn: () => void) => (onSignedOut = fn);

export function failureOf(status: number, body: unknown): ApiFailure {
  const detail =
    (body as { detail?: unknown; message?: unknown } | null)?.detail ?? (body as { message?: unknown } | null)?.message;
  if (Array.isArray(detail)) {
    const fields: Record<string, string> = {};
    for (const issue of detail as Issue[]) {
      const path = (issue.loc ?? []).slice(1).join('.');
      fields[path] = fields[path] ? `${fields[path]}; ${issue.msg ?? 'invalid'}` : (issue.msg ?? 'invalid');
    }
    const summary = Object.entries(fields)
      .map(([k, v]) => (k ? `${k}: ${v}` : v))
      .join('; ');
    return new ApiFailure(status, summary || 'Invalid input', fields);
  }
  return new ApiFailure(status, typeof detail === 'string' ? detail : `Request failed (HTTP ${status})`);
}

export async function api<T = unknown>(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: {
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiFailure(0, 'The service cannot be reached');
  }
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  if (!res.ok) {
    if (res.status === 401 && !headers['x-session-api-key']) onSignedOut();
    throw failureOf(res.status, parsed);
  }
  return parsed as T;
}

/** A query string from the defined values (arrays repeat the name). */
export function query(params: Record<string, string | number | undefined | null | string[]>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) for (const x of v) q.append(k, x);
    else q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
