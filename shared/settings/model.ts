import * as z from '#shared/zod.ts';

/** Bounded text: every string the API stores has a ceiling, so no field can bloat an item. */
const text = (max = 1024) => z.string().check(z.maxLength(max, `must be at most ${max} characters`));
const nullableText = (max = 1024) => z.nullable(text(max));
const httpUrl = z.lazy(() =>
  z.string().check(
    z.maxLength(2048),
    z.refine((v) => /^https?:\/\/[^\s]+$/i.test(v) && URL.canParse(v), 'must be an http(s) URL'),
  ),
);

export const gitProviders = ['github', 'gitlab', 'bitbucket', 'enterprise_sso'] as const;
export const gitProviderSchema = z.lazy(() => z.enum(gitProviders));

// --- MCP configuration -----------------------------------------------------------------------

const serverName = z.lazy(() =>
  z.string().check(z.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 of A-Z a-z 0-9 . _ -')),
);
export const envName = z.lazy(() =>
  z.string().check(z.regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name')),
);

export const remoteServerSchema = z.lazy(() =>
  z.object({
    url: httpUrl,
    /** null or absent on a save keeps the key stored for the same url. */
    api_key: z.optional(nullableText(4096)),
  }),
);

export const stdioServerSchema = z.lazy(() =>
  z.object({
    name: serverName,
    command: text(1024).check(z.minLength(1, 'must not be empty')),
    args: z._default(z.array(text(4096)).check(z.maxLength(100)), []),
    /** A null value on a save keeps the value stored for the same server and variable. */
    env: z._default(z.record(envName, nullableText(8192)), {}),
  }),
);

export const mcpConfigSchema = z.lazy(() =>
  z.object({
    sse_servers: z._default(z.array(remoteServerSchema).check(z.maxLength(50)), []),
    stdio_servers: z
      ._default(z.array(stdioServerSchema).check(z.maxLength(50)), [])
      .check(
        z.refine((list) => new Set(list.map((s) => s.name)).size === list.length, 'stdio server names must be unique'),
      ),
    shttp_servers: z._default(z.array(remoteServerSchema).check(z.maxLength(50)), []),
  }),
);
export type McpConfigInput = z.output<typeof mcpConfigSchema>;

// --- secrets_store -----------------------------------------------------------------------------

export const providerTokenSchema = z.lazy(() =>
  z.object({
    /** null or absent keeps the stored token; "" removes the provider. */
    token: z.optional(nullableText(4096)),
    host: z.optional(nullableText(255)),
    user_id: z.optional(nullableText(255)),
  }),
);

export const customSecretSchema = z.lazy(() =>
  z.union([
    text(8192),
    z.object({
      /** null or absent keeps the stored value; "" removes the secret. */
      secret: z.optional(nullableText(8192)),
      description: z.optional(nullableText(1024)),
    }),
  ]),
);

export const secretsStoreSchema = z.lazy(() =>
  z.object({
    /** Per provider; an entry of null removes it. */
    provider_tokens: z.optional(z.partialRecord(gitProviderSchema, z.nullable(providerTokenSchema))),
    /** Per secret name (an environment variable name, since commands see them as such); null removes. */
    custom_secrets: z.optional(z.record(envName, z.nullable(customSecretSchema))),
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
  z
    .string()
    .check(
      z.refine(
        (v) => choices.includes(v) || extra.includes(v),
        `${name} must be one of: ${choices.join(', ')}${extra.length ? ` (or ${extra.map((e) => JSON.stringify(e)).join(', ')} or null for none)` : ''}`,
      ),
    );

const positiveInt = (name: string, max: number) =>
  z
    .number()
    .check(
      z.int(`${name} must be an integer`),
      z.gte(1, `${name} must be at least 1`),
      z.lte(max, `${name} must be at most ${max}`),
    );

/** The sizes a sandbox may be multiplied by (`remote_runtime_resource_factor`). */
export const resourceFactors = [1, 2, 4, 8] as const as readonly number[];

export const settingsInputSchema = z.lazy(() =>
  z.object({
    language: z.optional(nullableText(32)),
    agent: z.nullish(choice('agent', agentChoices)),
    max_iterations: z.nullish(positiveInt('max_iterations', 10_000)),
    // "none" and "" as OpenHands' UI sends them for no analyzer.
    security_analyzer: z.nullish(choice('security_analyzer', securityAnalyzerChoices, ['', 'none'])),
    confirmation_mode: z.nullish(z.boolean()),
    llm_model: z.optional(nullableText(256)),
    llm_api_key: z.optional(nullableText(4096)),
    llm_base_url: z.nullish(z.union([httpUrl, z.literal('')])),
    // As OpenHands offers it: multiplies the sandbox spec's CPU and memory on AWS.
    remote_runtime_resource_factor: z.nullish(
      z
        .number()
        .check(
          z.refine(
            (v) => resourceFactors.includes(v),
            `remote_runtime_resource_factor must be one of ${resourceFactors.join(', ')}`,
          ),
        ),
    ),
    secrets_store: z.optional(secretsStoreSchema),
    enable_default_condenser: z.optional(z.boolean()),
    /** Messages the model sees before the condenser summarizes the middle (OpenHands' UI sends it); null: 120. */
    condenser_max_size: z.nullish(
      z
        .number()
        .check(
          z.int('condenser_max_size must be an integer'),
          z.gte(20, 'condenser_max_size must be at least 20'),
          z.lte(10_000, 'condenser_max_size must be at most 10000'),
        ),
    ),
    enable_sound_notifications: z.optional(z.boolean()),
    enable_proactive_conversation_starters: z.optional(z.boolean()),
    enable_solvability_analysis: z.optional(z.boolean()),
    user_consents_to_analytics: z.nullish(z.boolean()),
    sandbox_base_container_image: z.optional(nullableText(512)),
    sandbox_runtime_container_image: z.optional(nullableText(512)),
    mcp_config: z.optional(mcpConfigSchema),
    search_api_key: z.optional(nullableText(4096)),
    sandbox_api_key: z.optional(nullableText(4096)),
    max_budget_per_task: z.nullish(
      z
        .number()
        // DynamoDB stores no number closer to 0 than 1e-130; a budget below a millionth of a dollar means nothing anyway.
        .check(
          z.gte(0.000001, 'max_budget_per_task must be at least 0.000001'),
          z.lte(1_000_000, 'max_budget_per_task must be at most 1000000'),
        ),
    ),
    email: z.optional(nullableText(320)),
    email_verified: z.nullish(z.boolean()),
    git_user_name: z.optional(nullableText(256)),
    git_user_email: z.optional(nullableText(320)),
  }),
);
export type SettingsInput = z.output<typeof settingsInputSchema>;

/** The settings fields, read from the schema when first asked (building it is not free). */
let fieldNames: (keyof SettingsInput)[] | undefined;
export const settingsFieldNames = () =>
  (fieldNames ??= Object.keys(z.unlazy(settingsInputSchema).shape) as (keyof SettingsInput)[]);

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
      ...z.unlazy(settingsInputSchema).shape,
      llm_api_key_set: z.boolean(),
      search_api_key_set: z.boolean(),
      sandbox_api_key_set: z.boolean(),
      provider_tokens_set: z.record(z.string(), z.nullable(z.string())),
    })
    .check(z.meta({ description: 'Settings with every secret replaced by null' })),
);

export const saveSettingsResponseSchema = z.lazy(() =>
  z.object({
    message: z.string(),
    ignored_fields: z
      .array(z.string())
      .check(z.meta({ description: 'Body members that are not settings fields and were not stored' })),
  }),
);
