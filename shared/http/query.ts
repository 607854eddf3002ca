import * as z from '#shared/zod.ts';

/** Query strings arrive as text; these read them into typed values with the API's own bounds. */
export const pageLimit = z.lazy(() =>
  z._default(
    z.coerce
      .number({ error: 'limit must be an integer from 1 to 100' })
      .check(
        z.int('limit must be an integer from 1 to 100'),
        z.gte(1, 'limit must be an integer from 1 to 100'),
        z.lte(100, 'limit must be an integer from 1 to 100'),
      ),
    100,
  ),
);

export const pageId = z.lazy(() => z.optional(z.string().check(z.minLength(1), z.maxLength(2048))));

/** `page_id` and `limit`, the query of a plain paginated search. */
export const pageQuery = z.lazy(() => z.object({ page_id: pageId, limit: pageLimit }));

/**
 * A date-time bound (`created_at__gte`, `timestamp__lt`...). Bounded: ISO-8601 allows any number of
 * fractional digits, and a sort-key condition value over 1 KB is an error in DynamoDB.
 */
export const dateTimeFilter = z.lazy(() =>
  z.optional(
    z.iso.datetime({ offset: true, local: true, message: 'must be an ISO-8601 date-time' }).check(z.maxLength(40)),
  ),
);

/** A repeated parameter (`id=a&id=b`): always an array, at most 100 members, each by its id kind's rule. */
export const repeated = (
  name: string,
  item: z.ZodMiniType<string> = z.string().check(z.minLength(1), z.maxLength(200)),
) =>
  z.pipe(
    z.transform((v: unknown) => (v === undefined ? [] : Array.isArray(v) ? v : [v])),
    z.array(item).check(z.maxLength(100, `at most 100 ${name} values per request`)),
  );

/** Parses a raw query string, keeping repeated names as arrays (payload 2.0 would join them with commas). */
export function parseQuery(raw: string | undefined): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(raw ?? '')) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}
