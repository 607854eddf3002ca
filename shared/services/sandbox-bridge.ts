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
  (c) => {
    const deps = sandboxDeps(c);
    Object.defineProperty(deps, 'alerts', { get: () => c.use(usageAlerts), enumerable: true });
    // Built when first read (a limit pause at a heartbeat): the conversations, their events, the stream.
    Object.defineProperty(deps, 'pauseNotices', {
      get: () => new PauseNotices(c.adapter('conversationStore'), c.adapter('eventStore'), c.adapter('eventFeed')),
      enumerable: true,
    });
    return new SandboxBridge(deps);
  },
);
