import { envPlatformModels } from '#shared/llm/platform-models.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** The platform models from PLATFORM_LLMS (the CDK context `platformLlms`), checked when first built. */
export const platformModels: Builder<'platformModels'> = () => envPlatformModels(process.env.PLATFORM_LLMS);
