import * as z from 'zod';

/** Bounded text: every string the API stores has a ceiling, so no field can bloat an item. */
const text = (max = 1024) => z.string().max(max, `must be at most ${max} characters`);
const nullableText = (max = 1024) => text(max).nullable();
const httpUrl = z.lazy(() =>
  z
    .string()
    .max(2048)
    .refine((v) => /^https?:\/\/[^\s]+$/i.test(v) && URL.canParse(v), 'must be an http(s) URL'),
);

export const gitProviders = ['github', 'gitlab', 'bitbucket', 'enterprise_sso'] as const;
export const gitProviderSchema = z.lazy(() => z.enum(gitProviders));

// --- MCP configuration -----------------------------------------------------------------------

const serverName = z.lazy(() => z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 of A-Z a-z 0-9 . _ -'));
const envName = z.lazy(() => z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name'));

export const remoteServerSchema = z.lazy(() =>
  z.object({
    url: httpUrl,
    /** null or absent on a save keeps the key stored for the same url. */
    api_key: nullableText(4096).optional(),
  }),
);

export const stdioServerSchema = z.lazy(() =>
  z.object({
    name: serverName,
    command: text(1024).min(1, 'must not be empty'),
    args: z.array(text(4096)).max(100).default([]),
    /** A null value on a save keeps the value stored for the same server and variable. */
    env: z.record(envName, nullableText(8192)).default({}),
  }),
);

export const mcpConfigSchema = z.lazy(() =>
  z.object({
    sse_servers: z.array(remoteServerSchema).max(50).default([]),
    stdio_servers: z
      .array(stdioServerSchema)
      .max(50)
      .default([])
      .refine((list) => new Set(list.map((s) => s.name)).size === list.length, 'stdio server names must be unique'),
    shttp_servers: z.array(remoteServerSchema).max(50).default([]),
  }),
);
export type McpConfigInput = z.output<typeof mcpConfigSchema>;

// --- secrets_store -----------------------------------------------------------------------------

export const providerTokenSchema = z.lazy(() =>
  z.object({
    /** null or absent keeps the stored token; "" removes the provider. */
    token: nullableText(4096).optional(),
    host: nullableText(255).optional(),
    user_id: nullableText(255).optional(),
  }),
);

export const customSecretSchema = z.lazy(() =>
  z.union([
    text(8192),
    z.object({
      /** null or absent keeps the stored value; "" removes the secret. */
      secret: nullableText(8192).optional(),
      description: nullableText(1024).optional(),
    }),
  ]),
);

export const secretsStoreSchema = z.lazy(() =>
  z.object({
    /** Per provider; an entry of null removes it. */
    provider_tokens: z.partialRecord(gitProviderSchema, providerTokenSchema.nullable()).optional(),
    /** Per secret name (an environment variable name, since commands see them as such); null removes. */
    custom_secrets: z.record(envName, customSecretSchema.nullable()).optional(),
  }),
);

// --- Settings (the body of POST /api/settings) -------------------------------------------------

/** The agents a conversation can run (`GET /api/options/agents`); the sandbox's agent implements each. */
export const agentChoices = ['CodeActAgent', 'PlanningAgent'] as const;
export type AgentChoice = (typeof agentChoices)[number];
/** Security analyzers (`GET /api/options/security-analyzers`); null or "" means none. */
export const securityAnalyzerChoices = ['llm'] as const;

/** One of `choices`; anything else is a 422 that lists them. */
const choice = (name: string, choices: readonly string[], extra: readonly string[] = []) =>
  z.string().refine((v) => choices.includes(v) || extra.includes(v), `${name} must be one of: ${choices.join(', ')}${extra.length ? ` (or ${extra.map((e) => JSON.stringify(e)).join(', ')} or null for none)` : ''}`);

const positiveInt = (name: string, max: number) =>
  z.number().int(`${name} must be an integer`).min(1, `${name} must be at least 1`).max(max, `${name} must be at most ${max}`);

/** The sizes a sandbox may be multiplied by (`remote_runtime_resource_factor`). */
export const resourceFactors = [1, 2, 4, 8] as const as readonly number[];

export const settingsInputSchema = z.lazy(() =>
  z.object({
    language: nullableText(32).optional(),
    agent: choice('agent', agentChoices).nullable().optional(),
    max_iterations: positiveInt('max_iterations', 10_000).nullable().optional(),
    // "none" and "" as OpenHands' UI sends them for no analyzer.
    security_analyzer: choice('security_analyzer', securityAnalyzerChoices, ['', 'none']).nullable().optional(),
    confirmation_mode: z.boolean().nullable().optional(),
    llm_model: nullableText(256).optional(),
    llm_api_key: nullableText(4096).optional(),
    llm_base_url: httpUrl.or(z.literal('')).nullable().optional(),
    // As OpenHands offers it: multiplies the sandbox spec's CPU and memory on AWS.
    remote_runtime_resource_factor: z
      .number()
      .refine((v) => resourceFactors.includes(v), `remote_runtime_resource_factor must be one of ${resourceFactors.join(', ')}`)
      .nullable()
      .optional(),
    secrets_store: secretsStoreSchema.optional(),
    enable_default_condenser: z.boolean().optional(),
    /** Messages the model sees before the condenser summarizes the middle (OpenHands' UI sends it); null: 120. */
    condenser_max_size: z
      .number()
      .int('condenser_max_size must be an integer')
      .min(20, 'condenser_max_size must be at least 20')
      .max(10_000, 'condenser_max_size must be at most 10000')
      .nullable()
      .optional(),
    enable_sound_notifications: z.boolean().optional(),
    enable_proactive_conversation_starters: z.boolean().optional(),
    enable_solvability_analysis: z.boolean().optional(),
    user_consents_to_analytics: z.boolean().nullable().optional(),
    sandbox_base_container_image: nullableText(512).optional(),
    sandbox_runtime_container_image: nullableText(512).optional(),
    mcp_config: mcpConfigSchema.optional(),
    search_api_key: nullableText(4096).optional(),
    sandbox_api_key: nullableText(4096).optional(),
    max_budget_per_task: z
      .number()
      // DynamoDB stores no number closer to 0 than 1e-130; a budget below a millionth of a dollar means nothing anyway.
      .min(0.000001, 'max_budget_per_task must be at least 0.000001')
      .max(1_000_000, 'max_budget_per_task must be at most 1000000')
      .nullable()
      .optional(),
    email: nullableText(320).optional(),
    email_verified: z.boolean().nullable().optional(),
    git_user_name: nullableText(256).optional(),
    git_user_email: nullableText(320).optional(),
  }),
);
export type SettingsInput = z.output<typeof settingsInputSchema>;

/** The settings fields, read from the schema when first asked (building it is not free). */
let fieldNames: (keyof SettingsInput)[] | undefined;
export const settingsFieldNames = () => (fieldNames ??= Object.keys(settingsInputSchema.unwrap().shape) as (keyof SettingsInput)[]);

/** Top-level members of a body that are not settings fields (reported, never stored). */
export const unknownSettingsFields = (raw: unknown): string[] =>
  raw && typeof raw === 'object' && !Array.isArray(raw)
    ? Object.keys(raw).filter((k) => !(settingsFieldNames() as string[]).includes(k))
    : [];

/** Fields stored sealed and never shown. */
export const secretFields = ['llm_api_key', 'search_api_key', 'sandbox_api_key'] as const;
export type SecretField = (typeof secretFields)[number];

/** A null in the body keeps what is stored (OpenHands' rule, extended to every secret so a GET-edit-POST round trip never wipes one). */
export const keepOnNull = new Set<string>(['llm_model', 'llm_base_url', 'user_consents_to_analytics', ...secretFields]);

export const settingsDefaults = {
  enable_default_condenser: true,
  enable_sound_notifications: false,
  enable_proactive_conversation_starters: true,
  enable_solvability_analysis: true,
} as const;

// --- What is stored and shown --------------------------------------------------------------------

export interface McpRemoteServer {
  url: string;
  api_key: string | null;
}
export interface McpStdioServer {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string | null>;
}
export interface McpConfig {
  sse_servers: McpRemoteServer[];
  stdio_servers: McpStdioServer[];
  shttp_servers: McpRemoteServer[];
}

export interface ProviderToken {
  token: string;
  host: string | null;
  user_id: string | null;
}
export interface CustomSecret {
  secret: string;
  description: string | null;
}

/** Everything secret about a user's settings, opened (each secret is sealed on its own; the earlier format sealed this as one document). */
export interface SecretsDoc {
  llm_api_key?: string;
  search_api_key?: string;
  sandbox_api_key?: string;
  provider_tokens: Partial<Record<(typeof gitProviders)[number], ProviderToken>>;
  custom_secrets: Record<string, CustomSecret>;
  mcp_config: McpConfig;
}

/** The non-secret fields: everything of the body but the secrets. */
export type PublicSettings = Omit<SettingsInput, SecretField | 'secrets_store' | 'mcp_config'>;

/** Settings with their secrets in the clear, for the agent only (never a response). */
export interface ResolvedSettings extends PublicSettings {
  llm_api_key: string | null;
  search_api_key: string | null;
  sandbox_api_key: string | null;
  secrets_store: Pick<SecretsDoc, 'provider_tokens' | 'custom_secrets'>;
  mcp_config: McpConfig;
}

/** Response schema of GET /api/settings, for the API document. */
export const maskedSettingsSchema = z.lazy(() =>
  z
    .object({
      ...settingsInputSchema.unwrap().shape,
      llm_api_key_set: z.boolean(),
      search_api_key_set: z.boolean(),
      sandbox_api_key_set: z.boolean(),
      provider_tokens_set: z.record(z.string(), z.string().nullable()),
    })
    .meta({ description: 'Settings with every secret replaced by null' }),
);

export const saveSettingsResponseSchema = z.lazy(() =>
  z.object({
    message: z.string(),
    ignored_fields: z.array(z.string()).meta({ description: 'Body members that are not settings fields and were not stored' }),
  }),
);
