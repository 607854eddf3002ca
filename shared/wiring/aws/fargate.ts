import { fargateConfigFromEnv, FargateSandboxRuntime } from '#shared/sandboxes/runtime/fargate-sandbox-runtime.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** The ECS client: only in the bundles of functions that start, stop or list sandbox tasks. */
export const sandboxRuntime: Builder<'sandboxRuntime'> = () => new FargateSandboxRuntime(fargateConfigFromEnv());
