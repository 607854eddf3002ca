import { usageReconcileFunction } from '#shared/functions.ts';
import { usageReconcile } from '#shared/services/usage-reconcile.ts';
import { awsFunction } from '#shared/wiring/aws.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { sandboxStore } from '#shared/wiring/aws/sandboxes.ts';
import { usageStore } from '#shared/wiring/aws/usage.ts';

/** The schedule's invocation: the default days (the two before today, UTC); `{"days": [...]}` names others. */
export const handler = awsFunction(
  usageReconcileFunction,
  { usageStore, sandboxStore, conversationStore },
  { usageReconcile },
  (event: { days?: unknown } | null | undefined, services) => {
    const days = Array.isArray(event?.days)
      ? event.days.filter((d): d is string => typeof d === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(d))
      : undefined;
    return services.usageReconcile.run(days?.length ? { days } : {});
  },
);
