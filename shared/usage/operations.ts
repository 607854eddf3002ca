import * as z from '#shared/zod.ts';
import { orgIdParam } from '#shared/accounts/org-id.ts';
import { invalidField } from '#shared/http/errors.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { pageId, pageLimit } from '#shared/http/query.ts';
import { callerOf } from '#shared/accounts/caller.ts';

const realDay = (v: string) => {
  const t = Date.parse(`${v}T00:00:00Z`);
  return !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === v;
};
const day = (name: string) =>
  z.optional(
    z
      .string()
      .check(
        z.regex(/^\d{4}-\d{2}-\d{2}$/, `${name} must be a date, YYYY-MM-DD (UTC)`),
        z.refine(realDay, `${name} must be a real calendar date`),
      ),
  );
const today = () => new Date().toISOString().slice(0, 10);
/** The longest range one request reads (O(days) reads per request). */
const MAX_USAGE_DAYS = 366;

const amounts = {
  vcpu_seconds: z.number(),
  gb_seconds: z.number(),
  compute_cost_usd: z.number(),
  llm_calls: z.number(),
  llm_input_tokens: z.number(),
  llm_output_tokens: z.number(),
  llm_cached_input_tokens: z.number(),
  llm_cache_write_input_tokens: z.number(),
  llm_cost_usd: z.number(),
  storage_gb_hours: z.number(),
  storage_cost_usd: z.number(),
  correction_usd: z.number(),
  total_cost_usd: z.number(),
  reported_llm_calls: z.number(),
  reported_llm_input_tokens: z.number(),
  reported_llm_output_tokens: z.number(),
  reported_llm_cost_usd: z.number(),
};

export const getUsage = defineOperation(
  'getUsage',
  () => ({
    query: z.object({
      from: day('from'),
      to: day('to'),
      group_by: z._default(z.enum(['day', 'user', 'model', 'conversation']), 'day'),
      limit: pageLimit,
      page_id: pageId,
    }),
    response: z.object({
      org_id: z.string(),
      scope: z.enum(['organization', 'user']),
      from: z.string(),
      to: z.string(),
      group_by: z.enum(['day', 'user', 'model', 'conversation']),
      currency: z.literal('USD'),
      items: z.array(
        z.union([
          z.object({
            day: z.optional(z.string()),
            user_id: z.optional(z.string()),
            model: z.optional(z.string()),
            ...amounts,
          }),
          // group_by=conversation: what the conversation's `metrics` keep (the agent's report, informational).
          z.object({
            conversation_id: z.string(),
            title: z.nullable(z.string()),
            created_at: z.string(),
            updated_at: z.string(),
            reported_llm_cost_usd: z.number(),
            reported_llm_input_tokens: z.number(),
            reported_llm_output_tokens: z.number(),
          }),
        ]),
      ),
      /** group_by=conversation: the next page of conversations; null otherwise or at the end. */
      next_page_id: z.nullable(z.string()),
      total: z.object(amounts),
      limits: z.optional(
        z.object({
          plan: z.string(),
          month: z.string(),
          on_limit: z.enum(['stop', 'warn']),
          prepaid: z.boolean(),
          sandbox_hours_per_month: z.number(),
          sandbox_hours_used: z.number(),
          monthly_spend_usd: z.number(),
          spend_used_usd: z.number(),
          credits: z.nullable(
            z.object({
              total_granted_usd: z.number(),
              spent_usd: z.number(),
              balance_usd: z.number(),
              since: z.nullable(z.string()),
            }),
          ),
        }),
      ),
    }),
  }),
  async ({ userId, auth, query }, { usage, cursors }) => {
    const from = query.from ?? `${today().slice(0, 8)}01`;
    const to = query.to ?? today();
    if (to < from) throw invalidField(['query', 'to'], 'to must not be before from', to);
    if (Date.parse(to) - Date.parse(from) > (MAX_USAGE_DAYS - 1) * 86_400_000)
      throw invalidField(['query', 'to'], `at most ${MAX_USAGE_DAYS} days from from to to`, to);
    if (query.group_by !== 'conversation')
      return { ...(await usage.report(userId, auth, { from, to, group_by: query.group_by })), next_page_id: null };
    // The cursor is the caller's (conversations are per user) and this range's: another range's is refused.
    const scope = `usage-conversations:${userId}:${from}:${to}`;
    const page = await usage.conversationPage(userId, {
      from,
      to,
      limit: query.limit,
      after: await cursors.decode(query.page_id, scope),
    });
    return {
      ...(await usage.report(userId, auth, { from, to, group_by: 'conversation' }, page.items)),
      next_page_id: await cursors.encode(page.lastKey, scope),
    };
  },
);

export const listNotifications = defineOperation(
  'listNotifications',
  () => ({
    query: z.object({ limit: pageLimit, page_id: pageId }),
    response: z.object({
      items: z.array(
        z.object({
          org_id: z.string(),
          period: z.string(),
          limit: z.enum(['sandbox_hours_per_month', 'monthly_spend_usd', 'credits']),
          threshold: z.number(),
          used: z.number(),
          limit_value: z.number(),
          unit: z.enum(['hours', 'USD']),
          at: z.string(),
        }),
      ),
      next_page_id: z.nullable(z.string()),
    }),
  }),
  async ({ userId, auth, query }, { usage, cursors }) => {
    const scope = `notices:${auth.orgId ?? userId}`;
    const after = (await cursors.decode(query.page_id, scope))?.sk;
    const page = await usage.notices(userId, auth, query.limit, typeof after === 'string' ? after : undefined);
    return { items: page.items, next_page_id: await cursors.encode(page.last ? { sk: page.last } : undefined, scope) };
  },
);

const MAX_GRANT_USD = 1_000_000;
/** A JSON number of USD with at most 6 decimals, as exact integer micro-USD (no float arithmetic). */
function microUsdOf(amount: number): number | undefined {
  if (!Number.isFinite(amount) || amount <= 0 || amount > MAX_GRANT_USD) return undefined;
  // Shortest round-trip decimal form; anything in exponent form is below a micro-dollar here.
  const m = /^(\d+)(?:\.(\d{1,6}))?$/.exec(String(amount));
  if (!m) return undefined;
  return Number(m[1]) * 1_000_000 + Number((m[2] ?? '').padEnd(6, '0'));
}
/** A signed, non-zero amount of USD (a correction), as exact integer micro-USD. */
const signedMicroUsdOf = (amount: number): number | undefined => {
  const m = microUsdOf(Math.abs(amount));
  return m === undefined ? undefined : amount < 0 ? -m : m;
};

export const recordCorrection = defineOperation(
  'recordCorrection',
  () => ({
    params: z.object({ org_id: orgIdParam }),
    body: z.strictObject({
      amount_usd: z
        .number()
        .check(
          z.refine(
            (n) => signedMicroUsdOf(n) !== undefined,
            `amount_usd must be a non-zero amount of at most ${MAX_GRANT_USD} USD either way, with at most 6 decimals`,
          ),
        ),
      day: z.string().check(
        z.regex(/^\d{4}-\d{2}-\d{2}$/, 'day must be a date, YYYY-MM-DD (UTC)'),
        z.refine(realDay, 'day must be a real calendar date'),
        z.refine((d) => d <= today(), 'day must not be in the future'),
      ),
      reason: z.string().check(z.minLength(1), z.maxLength(200)),
      user_id: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
    }),
    response: z.object({
      success: z.literal(true),
      id: z.string(),
      org_id: z.string(),
      user_id: z.nullable(z.string()),
      day: z.string(),
      amount_usd: z.number(),
      reason: z.string(),
      created_at: z.string(),
    }),
    example: { amount_usd: -12.5, day: '2026-10-14', reason: 'outage credit, ticket 812', user_id: 'alice' },
  }),
  ({ userId, auth, params, body }, { credits }) =>
    credits.correct(callerOf(userId, auth), params.org_id, {
      microUsd: signedMicroUsdOf(body.amount_usd)!,
      day: body.day,
      reason: body.reason,
      ...(body.user_id !== undefined ? { userId: body.user_id } : {}),
    }),
);

export const grantCredits = defineOperation(
  'grantCredits',
  () => ({
    params: z.object({ org_id: orgIdParam }),
    body: z.strictObject({
      amount_usd: z
        .number()
        .check(
          z.refine(
            (n) => microUsdOf(n) !== undefined,
            `amount_usd must be more than 0 and at most ${MAX_GRANT_USD} USD, with at most 6 decimals`,
          ),
        ),
      note: z.optional(z.string().check(z.maxLength(200))),
    }),
    response: z.object({
      success: z.literal(true),
      org_id: z.string(),
      granted_usd: z.number(),
      total_granted_usd: z.number(),
      spent_usd: z.number(),
      balance_usd: z.number(),
      since: z.nullable(z.string()),
      prepaid: z.boolean(),
    }),
    example: { amount_usd: 25, note: 'invoice 2026-0042' },
  }),
  ({ userId, auth, params, body }, { credits }) =>
    credits.grant(callerOf(userId, auth), params.org_id, microUsdOf(body.amount_usd)!, body.note),
);
