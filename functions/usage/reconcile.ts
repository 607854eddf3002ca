import { usageReconcileFunction } from '#shared/functions.ts';
import { accountPurge } from '#shared/services/account-purge.ts';
import { usageReconcile } from '#shared/services/usage-reconcile.ts';
import { awsFunction } from '#shared/wiring/aws.ts';

/**
 * The schedule's invocation: the default days (the two before today, UTC); `{"days": [...]}` names others.
 * Then deleted accounts' data, a bounded amount a night (shared/accounts/deletion.ts).
 */
export const handler = awsFunction(
  usageReconcileFunction,
  { usageReconcile, accountPurge },
  async (event: { days?: unknown } | null | undefined, services) => {
    const days = Array.isArray(event?.days)
      ? event.days.filter((d): d is string => typeof d === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(d))
      : undefined;
    const reconciled = await services.usageReconcile.run(days?.length ? { days } : {});
    return { ...reconciled, accountsPurge: await services.accountPurge.sweep() };
  },
);
