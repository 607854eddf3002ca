import { SandboxSpecService } from '#shared/sandbox-specs/service.ts';
import { defineService } from '#shared/services.ts';

export const sandboxSpecs = defineService({ adapters: ['specs'] }, (c) => new SandboxSpecService(c.adapter('specs')));
