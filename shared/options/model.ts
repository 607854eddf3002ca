import * as z from '#shared/zod.ts';

/**
 * What the OpenHands web UI reads before anything else (`GET /api/options/config`). `APP_MODE:
 * "oss"` makes it skip its own (SaaS, OAuth) login and go straight to the settings; the caller
 * signs in with `POST /api/authenticate` beforehand, and the session cookie does the rest. No
 * OAuth app, analytics or billing here, so those are empty and off.
 */
export const appConfigSchema = z.lazy(() =>
  z.object({
    APP_MODE: z.enum(['oss', 'saas']),
    GITHUB_CLIENT_ID: z.string(),
    POSTHOG_CLIENT_KEY: z.string(),
    PROVIDERS_CONFIGURED: z.array(z.string()),
    FEATURE_FLAGS: z.object({
      ENABLE_BILLING: z.boolean(),
      HIDE_LLM_SETTINGS: z.boolean(),
      ENABLE_JIRA: z.boolean(),
      ENABLE_JIRA_DC: z.boolean(),
      ENABLE_LINEAR: z.boolean(),
    }),
  }),
);
export type AppConfig = z.output<typeof appConfigSchema>;

export const appConfig: AppConfig = {
  APP_MODE: 'oss',
  GITHUB_CLIENT_ID: '',
  POSTHOG_CLIENT_KEY: '',
  PROVIDERS_CONFIGURED: [],
  FEATURE_FLAGS: {
    ENABLE_BILLING: false,
    HIDE_LLM_SETTINGS: false,
    ENABLE_JIRA: false,
    ENABLE_JIRA_DC: false,
    ENABLE_LINEAR: false,
  },
};

/**
 * Models the agent can call without a base URL (its providers: `openai/…`, `anthropic/…`); with
 * `llm_base_url` any model name of that server works. `LLM_MODELS` (comma-separated) replaces the list.
 */
const DEFAULT_MODELS = [
  'openai/gpt-4o',
  'openai/gpt-4o-mini',
  'openai/gpt-4.1',
  'openai/gpt-4.1-mini',
  'openai/o4-mini',
  'anthropic/claude-sonnet-4-20250514',
  'anthropic/claude-opus-4-20250514',
  'anthropic/claude-3-5-haiku-20241022',
];

export function llmModels(env: NodeJS.ProcessEnv = process.env): string[] {
  const configured = (env.LLM_MODELS ?? '')
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean);
  return configured.length ? configured : DEFAULT_MODELS;
}
