import * as z from '#shared/zod.ts';
import { orgIdParam } from '#shared/accounts/org-id.ts';
import { callerOf } from '#shared/accounts/caller.ts';
import { MAX_EXPORT_DAYS } from '#shared/billing/export.ts';
import { StripeError, StripeReportRefused } from '#shared/billing/stripe.ts';
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

/** `PUT /api/v1/admin/orgs/{org_id}/billing`: operators map an organization to its Stripe customer (audited). */
export const setOrgBilling = defineOperation(
  'setOrgBilling',
  () => ({
    params: z.object({ org_id: orgIdParam }),
    body: z.strictObject({
      stripe_customer_id: z
        .string()
        .check(z.regex(/^cus_[A-Za-z0-9]{1,64}$/, 'stripe_customer_id must be a Stripe customer id (cus_...)')),
    }),
    response: z.object({
      success: z.literal(true),
      org_id: z.string(),
      stripe_customer_id: z.string(),
      previous: z.nullable(z.string()),
    }),
  }),
  ({ userId, auth, params, body }, { billingCustomers }) =>
    billingCustomers.set(callerOf(userId, auth), params.org_id, body.stripe_customer_id),
);

/** `POST /api/v1/admin/billing/stripe-reports`: operators send a period's usage to Stripe now (the daily run sends each day). */
export const reportStripeUsage = defineOperation(
  'reportStripeUsage',
  () => ({
    body: z.strictObject({ from: day('from'), to: day('to') }),
    response: z.object({
      from: z.string(),
      to: z.string(),
      sent: z.number(),
      already_reported: z.number(),
      skipped_orgs: z.array(z.string()),
      open_hours: z.number(),
      corrections: z.number(),
      unresolved_corrections: z.number(),
    }),
    errors: [409],
  }),
  async ({ userId, auth, body }, { stripeReports }) => {
    if (!callerOf(userId, auth).operator) throw new ApiError(403, { detail: 'Only an operator can do this' });
    if (body.to < body.from) throw invalidField(['body', 'to'], 'to must not be before from', body.to);
    if (body.to > today()) throw invalidField(['body', 'to'], 'to must not be after today (UTC)', body.to);
    try {
      return await stripeReports.report(body.from, body.to);
    } catch (err) {
      if (err instanceof StripeReportRefused) {
        if (err.field) throw invalidField(['body', err.field], err.message, body[err.field]);
        throw new ApiError(409, { detail: err.message });
      }
      if (err instanceof StripeError) throw new ApiError(502, { detail: err.message });
      throw err;
    }
  },
);
