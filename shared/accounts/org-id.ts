import * as z from '#shared/zod.ts';

/** An organization's id as a path parameter takes it: `org_` and 24 hex (a malformed one is a 422 naming it). */
export const orgIdParam = z
  .string()
  .check(z.regex(/^org_[0-9a-f]{24}$/, 'must be an organization id (org_ and 24 hex)'));
