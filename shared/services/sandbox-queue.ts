import { SandboxQueue, type SandboxQueueDeps } from '#shared/sandboxes/queue.ts';
import { defineService } from '#shared/services.ts';
import { lazy } from '#shared/wiring/lazy.ts';

/**
 * Sandbox statuses, command queueing and activity, for the services that neither start nor stop
 * sandboxes. The push is read when a command is queued: reads (a conversation list, housekeeping)
 * never build the bridge socket's client, and a function that queues nothing needs no grant for it.
 */
export const sandboxQueue = defineService(
  { adapters: ['sandboxStore', 'commandPush'] },
  (c) =>
    new SandboxQueue(
      lazy<SandboxQueueDeps>({ store: () => c.adapters.sandboxStore, commandPush: () => c.adapters.commandPush }),
    ),
);
