import { envSpecRegistry } from '#shared/sandbox-specs/env-spec-registry.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** The specs the deployment registered, from SANDBOX_SPECS: no request lists ECS. */
export const specs: Builder<'specs'> = () => envSpecRegistry(process.env.SANDBOX_SPECS);
