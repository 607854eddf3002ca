import { launchOptionsOf } from '#shared/sandboxes/runtime/sandbox-runtime.ts';
import { SandboxService } from '#shared/sandboxes/service.ts';
import { defineService } from '#shared/services.ts';
import { sandboxDeps, sandboxDepsAdapters, sandboxDepsUses } from '#shared/services/sandbox-deps.ts';
import { settings } from '#shared/services/settings.ts';

/** The user's sandbox API: a start applies the user's sandbox settings. */
export const sandboxes = defineService(
  { adapters: [...sandboxDepsAdapters], uses: [...sandboxDepsUses, settings] },
  (c) => new SandboxService(sandboxDeps(c, async (userId) => launchOptionsOf(await c.use(settings).find(userId)))),
);
