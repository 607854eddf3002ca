import { defineService } from '#shared/services.ts';
import { UsageAlerts } from '#shared/usage/alerts.ts';

/** The 80% / 100% notices of the writers that meter (the heartbeat, the LLM gateway); the bus is built at the first notice. */
export const usageAlerts = defineService(
  { adapters: ['usageStore', 'usageBus'] },
  (c) => new UsageAlerts({ store: c.adapter('usageStore'), bus: () => c.adapters.usageBus }),
);
