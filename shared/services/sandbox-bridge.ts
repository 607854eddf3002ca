import { PauseNotices } from '#shared/conversations/pause-notices.ts';
import { SandboxBridge } from '#shared/sandboxes/bridge-service.ts';
import { defineService } from '#shared/services.ts';
import { sandboxDeps, sandboxDepsAdapters, sandboxDepsUses } from '#shared/services/sandbox-deps.ts';
import { usageAlerts } from '#shared/services/usage-alerts.ts';

/** The bridge alone meters (the heartbeat): only its bundles carry the notices' code. */
export const sandboxBridge = defineService(
  {
    adapters: [...sandboxDepsAdapters, 'conversationStore', 'eventStore', 'eventFeed'],
    uses: [...sandboxDepsUses, usageAlerts],
  },
  (c) =>
    new SandboxBridge(
      sandboxDeps(c, undefined, {
        alerts: () => c.use(usageAlerts),
        // Built when first read (a limit pause at a heartbeat): the conversations, their events, the stream.
        pauseNotices: () =>
          new PauseNotices(c.adapter('conversationStore'), c.adapter('eventStore'), c.adapter('eventFeed')),
      }),
    ),
);
