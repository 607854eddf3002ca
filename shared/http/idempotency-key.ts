import { invalid } from '#shared/http/errors.ts';

/*
 * Idempotent creates: a route declared `idempotent: true` honours an `Idempotency-Key` header (the
 * IETF httpapi draft's name, as Stripe and others use it). Powertools' idempotency utility does the
 * bookkeeping in the idempotency table (its DynamoDB persistence; dynalite locally):
 * - the record's key is a hash of (route, user, header value): a key of one user never answers another;
 * - the first request with a key writes an INPROGRESS record with a conditional put, so of racing
 *   repeats exactly one runs the operation; the others get 409 with Retry-After (below);
 * - a success (any answer the operation returns) is stored, status, headers and body, and every
 *   repeat within 24 hours gets it back unchanged, with `Idempotent-Replayed: true`;
 * - the same key with another body (compared as JSON, member order aside) is 422 naming the header;
 * - an error answer (4xx/5xx from the operation) stores nothing: the record is removed, so a repeat
 *   runs again (as Stripe does: only a request that got through is kept).
 * An in-progress repeat is not held waiting (a Lambda does not wait: principle 8): it gets 409 at once
 * with `Retry-After: 1`, as the draft says; a client that honours it gets the first answer next time.
 * An INPROGRESS record whose request died (a Lambda timed out) stops counting after 30 s, API
 * Gateway's integration limit, so the key is usable again.
 */

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
/** How long a first answer is kept (also the table's TTL): the field's convention. */
export const KEEP_SECONDS = 24 * 60 * 60;
/** No request runs longer than API Gateway's 30 s integration limit: an older INPROGRESS record is stale. */
export const IN_PROGRESS_SECONDS = 30;
/** What an in-progress repeat is told to wait. */
export const RETRY_AFTER_SECONDS = 1;
/** Header set on a replayed answer. */
export const REPLAYED_HEADER = 'idempotent-replayed';

/** An answer as stored and replayed. */
export interface StoredAnswer {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

const loc = ['header', IDEMPOTENCY_HEADER];

/**
 * The request's Idempotency-Key, if it sent one: 1 to 255 visible ASCII characters (a UUID is the
 * usual choice). Anything else is a 422 naming the header.
 */
export function idempotencyKeyOf(headers: Record<string, string>): string | undefined {
  const value = headers[IDEMPOTENCY_HEADER.toLowerCase()];
  if (value === undefined) return undefined;
  if (!/^[\x21-\x7e]{1,255}$/.test(value))
    throw invalid([
      {
        type: 'value_error',
        loc,
        msg: `${IDEMPOTENCY_HEADER} must be 1 to 255 visible ASCII characters (e.g. a UUID)`,
      },
    ]);
  return value;
}
