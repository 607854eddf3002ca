import { DynamoLlmLedger } from '#shared/llm/dynamo-ledger.ts';
import { envPlatformModels } from '#shared/llm/platform-models.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** The platform models from PLATFORM_LLMS (the CDK context `platformLlms`), checked when first built. */
export const platformModels: Builder<'platformModels'> = () => envPlatformModels(process.env.PLATFORM_LLMS);

/** The gateway's ledger (tables usage and keys). */
export const llmLedger: Builder<'llmLedger'> = () => new DynamoLlmLedger();
