import { defineOperation } from '#shared/http/operation.ts';
import { appConfig, llmModels } from '#shared/options/model.ts';

/** What the OpenHands web UI reads before anything else: its mode and flags, the models to offer. */
export const getOptionsConfig = defineOperation('getOptionsConfig', async () => appConfig);

export const getOptionsModels = defineOperation('getOptionsModels', async () => llmModels());
