import * as z from '#shared/zod.ts';
import { conversationSettingsSchema, conversationSettingsView } from '#shared/conversations/agent-server.ts';
import { ApiError, notFound } from '#shared/http/errors.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { auditSave } from '#shared/settings/audit-save.ts';
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
  () => ({ response: z.union([maskedSettingsSchema, conversationSettingsSchema]), errors: [404] }),
  async ({ userId, auth }, { settings, conversationReads }) => {
    if (auth.via !== 'conversation') return settings.get(userId);
    // A conversation key (Agent Canvas's local mode): its conversation's view, never the owner's settings.
    const [conversation] = await conversationReads.ownedMany(userId, [auth.conversationId!]);
    if (!conversation) throw notFound('Conversation not found');
    const owner = await settings.get(userId).catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 404) return null;
      throw err;
    });
    return conversationSettingsView(
      conversation,
      owner as { agent?: string | null; confirmation_mode?: boolean | null },
    );
  },
);

export const saveSettings = defineOperation(
  'saveSettings',
  () => ({
    body: settingsInputSchema,
    response: saveSettingsResponseSchema,
    errors: [409],
    example: { llm_model: 'openai/gpt-4o', llm_api_key: 'sk-...', max_iterations: 100, confirmation_mode: false },
  }),
  async ({ userId, auth, body, rawBody }, { settings, audit, platformLlms }) => {
    // A platform model needs no llm_api_key (the platform pays through its gateway), but the plan must allow it.
    platformLlms.check(body.llm_model, auth.plan);
    await settings.save(userId, body);
    if (auth.orgId) await auditSave(audit, auth.orgId, userId, rawBody);
    return { message: 'Settings stored', ignored_fields: unknownSettingsFields(rawBody) };
  },
);

export const getCurrentUser = defineOperation(
  'getCurrentUser',
  () => ({
    response: z.object({
      id: z.string(),
      email: z.nullable(z.string()),
      org_id: z.nullable(z.string()),
      role: z.nullable(z.string()),
      is_operator: z.boolean(),
      settings: z.nullable(maskedSettingsSchema),
    }),
  }),
  // Organization and role as the authorizer read them (no read of its own).
  async ({ userId, auth }, { settings }) => ({
    id: userId,
    email: auth.email ?? null,
    org_id: auth.orgId ?? null,
    role: auth.role ?? null,
    is_operator: auth.operator === true,
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
