import * as z from '#shared/zod.ts';
import { callerOf } from '#shared/accounts/caller.ts';
import { MAX_EXPORT_DAYS } from '#shared/billing/export.ts';
import { ApiError, invalidField } from '#shared/http/errors.ts';
import { defineOperation } from '#shared/http/operation.ts';

const realDay = (v: string) => {
  const t = Date.parse(`${v}T00:00:00Z`);
  return !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === v;
};
const day = (name: string) =>
  z
    .string()
    .check(
      z.regex(/^\d{4}-\d{2}-\d{2}$/, `${name} must be a date, YYYY-MM-DD (UTC)`),
      z.refine(realDay, `${name} must be a real calendar date`),
    );
const today = () => new Date().toISOString().slice(0, 10);

/** `POST /api/v1/admin/billing/exports`: operators write a period's FOCUS file now (the schedule writes each day). */
export const exportBilling = defineOperation(
  'exportBilling',
  () => ({
    body: z.strictObject({ from: day('from'), to: day('to') }),
    response: z.object({
      from: z.string(),
      to: z.string(),
      key: z.string(),
      location: z.string(),
      lines: z.number(),
      records: z.number(),
      billed_cost_usd: z.string(),
    }),
  }),
  ({ userId, auth, body }, { billingExports }) => {
    if (!callerOf(userId, auth).operator) throw new ApiError(403, { detail: 'Only an operator can do this' });
    if (body.to < body.from) throw invalidField(['body', 'to'], 'to must not be before from', body.to);
    if (body.to > today()) throw invalidField(['body', 'to'], 'to must not be after today (UTC)', body.to);
    if (Date.parse(body.to) - Date.parse(body.from) > (MAX_EXPORT_DAYS - 1) * 86_400_000)
      throw invalidField(['body', 'to'], `at most ${MAX_EXPORT_DAYS} days from from to to`, body.to);
    return billingExports.run(body.from, body.to);
  },
);
