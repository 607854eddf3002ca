import { SandboxSpecService } from '#shared/sandbox-specs/service.ts';
import type { ServiceFactory } from '#shared/services.ts';

export const sandboxSpecs: ServiceFactory<SandboxSpecService> = (c) => new SandboxSpecService(c.adapter('specs'));
