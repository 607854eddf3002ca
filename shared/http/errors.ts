/**
 * Domain errors. Services throw these; the one handler wrapper turns them into responses, so a
 * status code is decided in exactly one place and a client never sees a stack trace.
 */
export interface ValidationIssue {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(
      typeof body === 'object' && body && 'detail' in body
        ? String((body as { detail: unknown }).detail)
        : `HTTP ${status}`,
    );
    this.name = 'ApiError';
  }
}

const detail = (status: number, message: string, headers?: Record<string, string>) =>
  new ApiError(status, { detail: message }, headers);

export const badRequest = (message: string) => detail(400, message);
export const unauthorized = (message = 'Unauthorized') => detail(401, message);
export const forbidden = (message = 'Forbidden') => detail(403, message);
export const notFound = (message = 'Not Found') => detail(404, message);
export const methodNotAllowed = (allowed: string[]) => detail(405, 'Method Not Allowed', { allow: allowed.join(', ') });
export const conflict = (message: string) => detail(409, message);
export const payloadTooLarge = (limit: number) =>
  detail(413, `Request body is larger than the limit of ${limit} bytes`);
export const unsupportedMediaType = (message: string) => detail(415, message);
/**
 * 429 (a rate or a count limit) always says when to try again: `Retry-After` in whole seconds, at
 * least 1. Clients and the typed client honour it.
 */
export const tooManyRequests = (message: string, retryAfterSeconds = 1) =>
  detail(429, message, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) });

/**
 * A plan's quota is used up (402, the contracts page's refusal): `code` is the plan member that
 * refused (`max_conversations`, `max_paused_sandboxes`, `max_events_per_conversation`,
 * `max_event_bytes_per_org`: shared/plans/README.md), with its `limit` and what is `used`.
 */
export const planLimit = (code: string, limit: number, used: number, message: string) =>
  new ApiError(402, { detail: message, code, limit, used });

/** 422 in the FastAPI shape OpenHands clients already parse: one entry per bad field. */
export const invalid = (issues: ValidationIssue[]) => new ApiError(422, { detail: issues });

export const invalidField = (loc: (string | number)[], msg: string, input?: unknown) =>
  invalid([{ type: 'value_error', loc, msg, ...(input === undefined ? {} : { input }) }]);
