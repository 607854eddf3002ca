import { SandboxHousekeeping } from '#shared/sandboxes/housekeeping.ts';
import { defineService } from '#shared/services.ts';
import { sandboxDeps, sandboxDepsAdapters, sandboxDepsUses } from '#shared/services/sandbox-deps.ts';

export const sandboxHousekeeping = defineService(
  { adapters: [...sandboxDepsAdapters], uses: [...sandboxDepsUses] },
  (c) => new SandboxHousekeeping(sandboxDeps(c)),
);
