import * as z from '#shared/zod.ts';
import { defineOperation } from '#shared/http/operation.ts';
import {
  agentChoices,
  maskedSettingsSchema,
  saveSettingsResponseSchema,
  securityAnalyzerChoices,
  settingsInputSchema,
  unknownSettingsFields,
} from '#shared/settings/model.ts';

/** The settings routes: each maps a validated request onto the settings service. */
export const getSettings = defineOperation(
  'getSettings',
  () => ({ response: maskedSettingsSchema, errors: [404] }),
  ({ userId }, { settings }) => settings.get(userId),
);

export const saveSettings = defineOperation(
  'saveSettings',
  () => ({
    body: settingsInputSchema,
    response: saveSettingsResponseSchema,
    errors: [409],
    example: { llm_model: 'openai/gpt-4o', llm_api_key: 'sk-...', max_iterations: 100, confirmation_mode: false },
  }),
  async ({ userId, body, rawBody }, { settings }) => {
    await settings.save(userId, body);
    return { message: 'Settings stored', ignored_fields: unknownSettingsFields(rawBody) };
  },
);

export const getCurrentUser = defineOperation(
  'getCurrentUser',
  () => ({ response: z.object({ id: z.string(), settings: z.nullable(maskedSettingsSchema) }) }),
  async ({ userId }, { settings }) => ({
    id: userId,
    settings: await settings.find(userId),
  }),
);

/** The choices of the `agent` and `security_analyzer` settings (anything else is a 422). */
export const listAgents = defineOperation(
  'listAgents',
  () => ({ response: z.array(z.enum(agentChoices)) }),
  async () => [...agentChoices],
);

export const listSecurityAnalyzers = defineOperation(
  'listSecurityAnalyzers',
  () => ({ response: z.array(z.enum(securityAnalyzerChoices)) }),
  async () => [...securityAnalyzerChoices],
);
