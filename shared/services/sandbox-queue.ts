import { SandboxQueue } from '#shared/sandboxes/queue.ts';
import { defineService } from '#shared/services.ts';

/** Sandbox statuses, command queueing and activity, for the services that neither start nor stop sandboxes. */
export const sandboxQueue = defineService(
  { adapters: ['sandboxStore', 'commandPush'] },
  (c) => new SandboxQueue({ store: c.adapter('sandboxStore'), commandPush: c.adapter('commandPush') }),
);
