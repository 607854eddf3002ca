import * as z from '#shared/zod.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { appConfig, appConfigSchema, llmModels } from '#shared/options/model.ts';

/** What the OpenHands web UI reads before anything else: its mode and flags, the models to offer. */
export const getOptionsConfig = defineOperation(
  'getOptionsConfig',
  () => ({ response: appConfigSchema }),
  async () => appConfig,
);

export const getOptionsModels = defineOperation(
  'getOptionsModels',
  () => ({ response: z.array(z.string()) }),
  async () => llmModels(),
);
