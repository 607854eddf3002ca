import { SandboxBridge } from '#shared/sandboxes/bridge-service.ts';
import type { ServiceFactory } from '#shared/services.ts';
import { sandboxDeps } from '#shared/services/sandbox-deps.ts';

export const sandboxBridge: ServiceFactory<SandboxBridge> = (c) => new SandboxBridge(sandboxDeps(c));
