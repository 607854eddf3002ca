import { SandboxHousekeeping } from '#shared/sandboxes/housekeeping.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { sandboxDeps } from '#shared/services/sandbox-deps.ts';

export const sandboxHousekeeping: ServiceFactory<SandboxHousekeeping> = (c) => new SandboxHousekeeping(sandboxDeps(c));
