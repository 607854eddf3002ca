import { launchOptionsOf } from '#shared/sandboxes/runtime/sandbox-runtime.ts';
import { SandboxService } from '#shared/sandboxes/service.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { sandboxDeps } from '#shared/services/sandbox-deps.ts';
import { settings } from '#shared/services/settings.ts';

/** The user's sandbox API: a start applies the user's sandbox settings. */
export const sandboxes: ServiceFactory<SandboxService> = (c) =>
  new SandboxService(sandboxDeps(c, async (userId) => launchOptionsOf(await c.use(settings).find(userId))));
