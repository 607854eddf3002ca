import * as z from '#shared/zod.ts';
import { notFound } from '#shared/http/errors.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { llmModels } from '#shared/options/model.ts';
import {
  agentChoices,
  securityAnalyzerChoices,
  settingsInputSchema,
  type SettingsInput,
} from '#shared/settings/model.ts';
import { auditSave } from '#shared/settings/audit-save.ts';
import type { MaskedSettings } from '#shared/settings/service.ts';

/*
 * What Agent Canvas's cloud mode reads and writes for settings (the app server's `/api/v1/settings*`),
 * served from the same stored settings as `/api/settings` (docs/openhands-clients.md). Canvas reads
 * `agent_settings` (`llm.model`, `llm.base_url`, `agent`, `condenser`) and `conversation_settings`
 * (`confirmation_mode`, `security_analyzer`, `max_iterations`), and `llm_api_key_set` to decide whether
 * its composer may send. Secrets stay null here as in `/api/settings`.
 */

/** Agent Canvas's view of the masked settings: the legacy fields plus the two grouped blocks it reads. */
function canvasView(m: MaskedSettings) {
  return {
    ...m,
    agent_settings: {
      agent_kind: 'openhands' as const,
      agent: m.agent ?? 'CodeActAgent',
      llm: { model: m.llm_model ?? null, base_url: m.llm_base_url ?? null, api_key: null },
      condenser: { enabled: m.enable_default_condenser ?? true, max_size: m.condenser_max_size ?? null },
    },
    conversation_settings: {
      confirmation_mode: m.confirmation_mode ?? false,
      security_analyzer: m.security_analyzer ?? null,
      max_iterations: m.max_iterations ?? null,
    },
    llm_api_key_is_set: m.llm_api_key_set,
  };
}

const canvasSettingsSchema = z.lazy(() =>
  z.looseObject({
    agent_settings: z.looseObject({ llm: z.looseObject({ model: z.nullable(z.string()), api_key: z.null() }) }),
    conversation_settings: z.looseObject({ confirmation_mode: z.boolean() }),
    llm_api_key_set: z.boolean(),
    llm_api_key_is_set: z.boolean(),
  }),
);

export const canvasGetSettings = defineOperation(
  'canvasGetSettings',
  () => ({ response: canvasSettingsSchema, errors: [404] }),
  async ({ userId }, { settings }) => canvasView(await settings.get(userId)),
);

/** The fields of `POST /api/settings` a Canvas diff may name, validated by the same schemas. */
const field = <K extends keyof ReturnType<typeof shape>>(k: K) => shape()[k];
const shape = () => z.unlazy(settingsInputSchema).shape;

const canvasSaveBody = z.lazy(() =>
  z.object({
    ...shape(),
    agent_settings_diff: z.optional(
      z.object({
        agent: field('agent'),
        llm: z.optional(
          z.object({ model: field('llm_model'), api_key: field('llm_api_key'), base_url: field('llm_base_url') }),
        ),
        condenser: z.optional(
          z.object({ enabled: field('enable_default_condenser'), max_size: field('condenser_max_size') }),
        ),
      }),
    ),
    conversation_settings_diff: z.optional(
      z.object({
        confirmation_mode: field('confirmation_mode'),
        security_analyzer: field('security_analyzer'),
        max_iterations: field('max_iterations'),
      }),
    ),
  }),
);

/** Members of a diff that are not stored here (Canvas-only settings such as `acp_model`, `mcp_config` in its own format). */
function ignoredOf(raw: unknown): string[] {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return [];
  const r = raw as Record<string, unknown>;
  const top = new Set([...Object.keys(shape()), 'agent_settings_diff', 'conversation_settings_diff']);
  const nested = (name: string, known: Record<string, string[] | null>): string[] => {
    const d = r[name];
    if (!d || typeof d !== 'object' || Array.isArray(d)) return [];
    return Object.entries(d as Record<string, unknown>).flatMap(([k, v]) => {
      if (!(k in known)) return [`${name}.${k}`];
      const sub = known[k];
      if (!sub || !v || typeof v !== 'object') return [];
      return Object.keys(v)
        .filter((s) => !sub.includes(s))
        .map((s) => `${name}.${k}.${s}`);
    });
  };
  return [
    ...Object.keys(r).filter((k) => !top.has(k)),
    ...nested('agent_settings_diff', {
      agent: null,
      llm: ['model', 'api_key', 'base_url'],
      condenser: ['enabled', 'max_size'],
    }),
    ...nested('conversation_settings_diff', { confirmation_mode: null, security_analyzer: null, max_iterations: null }),
  ];
}

const defined = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

export const canvasSaveSettings = defineOperation(
  'canvasSaveSettings',
  () => ({
    body: canvasSaveBody,
    response: z.object({ message: z.string(), ignored_fields: z.array(z.string()) }),
    errors: [409],
    example: {
      agent_settings_diff: { llm: { model: 'openai/gpt-4o', api_key: 'sk-...' } },
      conversation_settings_diff: { confirmation_mode: false },
    },
  }),
  async ({ userId, auth, body, rawBody }, { settings, audit }) => {
    const { agent_settings_diff: a, conversation_settings_diff: c, ...flat } = body;
    // The diff wins over a flat field of the same meaning (Canvas sends one or the other).
    const input = defined({
      ...flat,
      agent: a?.agent,
      llm_model: a?.llm?.model,
      llm_api_key: a?.llm?.api_key,
      llm_base_url: a?.llm?.base_url,
      enable_default_condenser: a?.condenser?.enabled,
      condenser_max_size: a?.condenser?.max_size,
      confirmation_mode: c?.confirmation_mode,
      security_analyzer: c?.security_analyzer,
      max_iterations: c?.max_iterations,
    });
    await settings.save(userId, input as SettingsInput);
    // Audited as /api/settings audits: the names of the fields saved, secrets set or cleared.
    if (auth.orgId) await auditSave(audit, auth.orgId, userId, input);
    return { message: 'Settings stored', ignored_fields: ignoredOf(rawBody) };
  },
);

/** A settings field as the SDK's schema describes it (what Canvas's generic settings pages render). */
const fieldSchema = (
  key: string,
  label: string,
  value_type: 'string' | 'integer' | 'boolean',
  extra: {
    default?: unknown;
    choices?: readonly (string | number | boolean)[];
    secret?: boolean;
    description?: string;
  } = {},
) => ({
  key,
  label,
  value_type,
  default: extra.default ?? null,
  choices: (extra.choices ?? []).map((v) => ({ label: String(v), value: v })),
  secret: extra.secret ?? false,
  description: extra.description ?? null,
  depends_on: [] as string[],
  prominence: 'major' as 'major' | 'critical',
});

const settingsSchemaSchema = z.lazy(() =>
  z.object({
    model_name: z.string(),
    sections: z.array(
      z.object({
        key: z.string(),
        label: z.string(),
        variant: z.nullable(z.string()),
        fields: z.array(z.looseObject({ key: z.string(), label: z.string(), value_type: z.string() })),
      }),
    ),
  }),
);

export const canvasAgentSettingsSchema = defineOperation(
  'canvasAgentSettingsSchema',
  () => ({ response: settingsSchemaSchema }),
  async (_, { platformLlms }) => ({
    model_name: 'AgentSettings',
    sections: [
      {
        key: 'llm',
        label: 'LLM',
        variant: null,
        fields: [
          // The choices of /api/options/models: the platform models (no API key needed), then the user-key ones.
          fieldSchema('llm.model', 'Model', 'string', { choices: [...platformLlms.names(), ...llmModels()] }),
          fieldSchema('llm.base_url', 'Base URL', 'string', {
            description: 'Any OpenAI-compatible endpoint; empty for the provider of the model',
          }),
          fieldSchema('llm.api_key', 'API key', 'string', { secret: true }),
        ],
      },
      {
        key: 'agent',
        label: 'Agent',
        variant: null,
        fields: [fieldSchema('agent', 'Agent', 'string', { default: 'CodeActAgent', choices: agentChoices })],
      },
      {
        key: 'condenser',
        label: 'Memory condensation',
        variant: null,
        fields: [
          fieldSchema('condenser.enabled', 'Enable memory condensation', 'boolean', { default: true }),
          fieldSchema('condenser.max_size', 'Messages before condensing', 'integer', { default: 120 }),
        ],
      },
    ],
  }),
);

export const canvasConversationSettingsSchema = defineOperation(
  'canvasConversationSettingsSchema',
  () => ({ response: settingsSchemaSchema }),
  async () => ({
    model_name: 'ConversationSettings',
    // The section keys Canvas's settings pages pick (its Verification page shows `verification`), as the SDK's schema has them.
    sections: [
      {
        key: 'verification',
        label: 'Verification',
        variant: null,
        fields: [
          {
            ...fieldSchema('confirmation_mode', 'Confirmation mode', 'boolean', { default: false }),
            prominence: 'critical' as const,
          },
          {
            ...fieldSchema('security_analyzer', 'Security analyzer', 'string', { choices: securityAnalyzerChoices }),
            depends_on: ['confirmation_mode'],
          },
        ],
      },
      {
        key: 'general',
        label: 'General',
        variant: null,
        fields: [fieldSchema('max_iterations', 'Maximum iterations', 'integer', { default: 100 })],
      },
    ],
  }),
);

/**
 * Named LLM profiles (`/api/v1/settings/profiles`, and `/api/organizations/{org_id}/profiles` once
 * Canvas picked an organization): not a concept here (one model per user, in the settings), so the
 * list is empty and Canvas falls back to the settings' model and `llm_api_key_set`.
 */
const profileListSchema = z.lazy(() =>
  z.object({ profiles: z.array(z.unknown()), active_profile: z.nullable(z.string()) }),
);

export const canvasListLlmProfiles = defineOperation(
  'canvasListLlmProfiles',
  () => ({ response: profileListSchema }),
  async () => ({ profiles: [], active_profile: null }),
);

export const canvasListOrgLlmProfiles = defineOperation(
  'canvasListOrgLlmProfiles',
  () => ({
    params: z.object({ org_id: z.string().check(z.minLength(1), z.maxLength(128)) }),
    response: profileListSchema,
    errors: [404],
  }),
  async ({ auth, params }) => {
    // Only the caller's own organization (what /api/organizations lists); any other is unknown to them.
    if (auth.orgId !== params.org_id) {
      throw notFound('Organization not found');
    }
    return { profiles: [], active_profile: null };
  },
);

export const canvasListProviderConnections = defineOperation(
  'canvasListProviderConnections',
  () => ({
    params: z.object({ org_id: z.string().check(z.minLength(1), z.maxLength(128)) }),
    response: z.object({ connections: z.array(z.never()) }),
    errors: [404],
  }),
  async ({ auth, params }) => {
    // LLM provider connections (subscription sign-ins) are not a concept here: the model's key is in the settings.
    if (auth.orgId !== params.org_id) throw notFound('Organization not found');
    return { connections: [] };
  },
);

/** Agent profiles (`GET /api/agent-profiles`): none here (one agent setting per user); Canvas then starts from the settings. */
export const canvasListAgentProfiles = defineOperation(
  'canvasListAgentProfiles',
  () => ({
    response: z.object({ profiles: z.array(z.unknown()), active_agent_profile_id: z.nullable(z.string()) }),
  }),
  async () => ({ profiles: [], active_agent_profile_id: null }),
);

/**
 * `GET /api/organizations/{org_id}/me`: the caller in their organization, as Agent Canvas reads it
 * (its user id, role, permissions). `permissions` is empty: nothing Canvas gates on them (organization
 * LLM profiles) can be written here.
 */
export const canvasOrgMe = defineOperation(
  'canvasOrgMe',
  () => ({
    params: z.object({ org_id: z.string().check(z.minLength(1), z.maxLength(128)) }),
    response: z.object({
      org_id: z.string(),
      user_id: z.string(),
      role: z.nullable(z.string()),
      permissions: z.array(z.string()),
    }),
    errors: [404],
  }),
  async ({ userId, auth, params }) => {
    if (auth.orgId !== params.org_id) throw notFound('Organization not found');
    return { org_id: params.org_id, user_id: userId, role: auth.role ?? null, permissions: [] };
  },
);
