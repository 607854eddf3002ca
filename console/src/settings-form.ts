import type { Answer, RequestBody } from '../../shared/client/index.ts';

/*
 * The settings form's logic, apart from its page (views/settings.tsx) so it is unit-tested
 * (test/unit/console.test.ts): the fields and their groups, the form's draft made from the stored
 * settings (`draftOf`), and the body of POST /api/settings made from the draft (`bodyOf`).
 */

/** The settings as GET /api/settings answers the owner (not a conversation key's narrow view). */
export type Settings = Extract<Answer<'/api/settings', 'get'>, { llm_api_key_set: boolean }>;
/** The body of POST /api/settings. */
export type SettingsBody = RequestBody<'/api/settings', 'post'>;
/** A settings field the form shows as one input (MCP servers, custom secrets and tokens have their own lists). */
export type FieldName = Exclude<keyof SettingsBody, 'mcp_config' | 'secrets_store'>;
/** The write-only settings, each with its `<name>_set` flag in the answer. */
export type SecretName = 'llm_api_key' | 'search_api_key' | 'sandbox_api_key';

export type Kind = 'text' | 'int' | 'number' | 'bool' | 'secret' | 'agent' | 'analyzer' | 'model';
export type FieldDef =
  | { name: SecretName; label: string; kind: 'secret'; hint?: string }
  | { name: Exclude<FieldName, SecretName>; label: string; kind: Exclude<Kind, 'secret'>; hint?: string };

/** Every settings field of the seed, grouped as a person looks for them. */
export const GROUPS: { title: string; fields: FieldDef[] }[] = [
  {
    title: 'LLM',
    fields: [
      {
        name: 'llm_model',
        label: 'Model',
        kind: 'model',
        hint: 'e.g. openai/gpt-4o, or the model name your base URL serves',
      },
      { name: 'llm_api_key', label: 'API key', kind: 'secret' },
      {
        name: 'llm_base_url',
        label: 'Base URL',
        kind: 'text',
        hint: 'Any OpenAI-compatible endpoint; empty for the provider of the model',
      },
      { name: 'max_budget_per_task', label: 'Budget per task (USD)', kind: 'number' },
      { name: 'enable_default_condenser', label: 'Summarize long conversations (condenser)', kind: 'bool' },
      {
        name: 'condenser_max_size',
        label: 'Condenser size (messages)',
        kind: 'int',
        hint: '20 or more; empty for 120',
      },
    ],
  },
  {
    title: 'Agent',
    fields: [
      { name: 'agent', label: 'Agent', kind: 'agent' },
      { name: 'max_iterations', label: 'Maximum iterations', kind: 'int' },
      { name: 'language', label: 'Language', kind: 'text', hint: 'e.g. en' },
      { name: 'confirmation_mode', label: 'Ask before running actions (confirmation mode)', kind: 'bool' },
      {
        name: 'security_analyzer',
        label: 'Security analyzer',
        kind: 'analyzer',
        hint: 'With "llm", only risky actions wait for confirmation',
      },
      { name: 'search_api_key', label: 'Search API key', kind: 'secret' },
      { name: 'enable_sound_notifications', label: 'Sound when the agent finishes or waits', kind: 'bool' },
      { name: 'enable_proactive_conversation_starters', label: 'Proactive conversation starters', kind: 'bool' },
      { name: 'enable_solvability_analysis', label: 'Solvability analysis', kind: 'bool' },
      { name: 'user_consents_to_analytics', label: 'Consent to analytics', kind: 'bool' },
    ],
  },
  {
    title: 'Sandbox',
    fields: [
      { name: 'sandbox_base_container_image', label: 'Base container image', kind: 'text' },
      { name: 'sandbox_runtime_container_image', label: 'Runtime container image', kind: 'text' },
      { name: 'remote_runtime_resource_factor', label: 'Resource factor', kind: 'int', hint: '1, 2, 4 or 8' },
      { name: 'sandbox_api_key', label: 'Sandbox API key', kind: 'secret' },
    ],
  },
  {
    title: 'Git identity and account',
    fields: [
      { name: 'git_user_name', label: 'Git user name', kind: 'text' },
      { name: 'git_user_email', label: 'Git user email', kind: 'text' },
      { name: 'email', label: 'Email', kind: 'text' },
      { name: 'email_verified', label: 'Email verified', kind: 'bool' },
    ],
  },
];

/** Text fields where null keeps the stored value: clearing them sends "". */
const CLEAR_WITH_EMPTY = new Set<FieldName>(['llm_model', 'llm_base_url']);
export const PROVIDERS = ['github', 'gitlab', 'bitbucket', 'enterprise_sso'] as const;
export type Provider = (typeof PROVIDERS)[number];

export interface Remote {
  url: string;
  api_key: string;
}
export interface Stdio {
  name: string;
  command: string;
  args: string;
  env: { key: string; value: string; stored: boolean }[];
}
export interface SecretRow {
  name: string;
  value: string;
  description: string;
  stored: boolean;
  remove: boolean;
}
export interface TokenRow {
  token: string;
  host: string;
  remove: boolean;
}

/** What the form holds: every input as typed, secrets empty until typed. */
export interface Draft {
  values: Partial<Record<FieldName, string | boolean>>;
  secrets: Record<SecretName, { value: string; clear: boolean }>;
  sse: Remote[];
  shttp: Remote[];
  stdio: Stdio[];
  custom: SecretRow[];
  tokens: Record<Provider, TokenRow>;
}

/** Whether a write-only setting has a stored value. */
export const isSecretSet = (s: Settings | null, name: SecretName) => s?.[`${name}_set` as const] === true;

/** The form's draft of the stored settings (none stored: the service's defaults for the flags that default on). */
export function draftOf(s: Settings | null): Draft {
  const values: Draft['values'] = {};
  const secrets = {} as Draft['secrets'];
  for (const g of GROUPS)
    for (const f of g.fields) {
      if (f.kind === 'secret') secrets[f.name] = { value: '', clear: false };
      else if (f.kind === 'bool') values[f.name] = s?.[f.name] === true;
      else values[f.name] = s?.[f.name] === null || s?.[f.name] === undefined ? '' : String(s[f.name]);
    }
  if (!s)
    Object.assign(values, {
      enable_default_condenser: true,
      enable_proactive_conversation_starters: true,
      enable_solvability_analysis: true,
    });
  const mcp = s?.mcp_config;
  const remote = (list: { url: string }[] | undefined): Remote[] =>
    (list ?? []).map((r) => ({ url: String(r.url ?? ''), api_key: '' }));
  return {
    values,
    secrets,
    sse: remote(mcp?.sse_servers),
    shttp: remote(mcp?.shttp_servers),
    stdio: (mcp?.stdio_servers ?? []).map((r) => ({
      name: String(r.name ?? ''),
      command: String(r.command ?? ''),
      args: (r.args ?? []).join('\n'),
      env: Object.keys(r.env ?? {}).map((key) => ({ key, value: '', stored: true })),
    })),
    custom: Object.entries(s?.secrets_store?.custom_secrets ?? {}).map(([name, v]) => ({
      name,
      value: '',
      description: (typeof v === 'object' && v?.description) || '',
      stored: true,
      remove: false,
    })),
    tokens: Object.fromEntries(
      PROVIDERS.map((p) => [p, { token: '', host: s?.provider_tokens_set?.[p] ?? '', remove: false }]),
    ) as Draft['tokens'],
  };
}

/** The body of POST /api/settings from the form: secrets only when typed (null keeps them), MCP servers as listed. */
export function bodyOf(d: Draft, s: Settings | null): SettingsBody {
  const fields: Partial<Record<FieldName, unknown>> = {};
  for (const g of GROUPS)
    for (const f of g.fields) {
      if (f.kind === 'secret') {
        const secret = d.secrets[f.name];
        if (secret.clear) fields[f.name] = '';
        else if (secret.value) fields[f.name] = secret.value;
        continue;
      }
      const v = d.values[f.name] ?? '';
      if (f.kind === 'bool') fields[f.name] = v === true;
      else if (f.kind === 'int' || f.kind === 'number') fields[f.name] = v === '' ? null : Number(v);
      else if (f.kind === 'analyzer') fields[f.name] = v === '' ? null : v;
      else fields[f.name] = v === '' ? (CLEAR_WITH_EMPTY.has(f.name) ? '' : null) : v;
    }
  const remote = (list: Remote[]) => list.map((r) => ({ url: r.url.trim(), api_key: r.api_key || null }));
  const custom: Record<string, { secret: string | null; description: string | null } | null> = {};
  for (const row of d.custom) {
    if (!row.name) continue;
    custom[row.name] = row.remove ? null : { secret: row.value || null, description: row.description || null };
  }
  const tokens: Record<string, { token: string | null; host: string | null } | null> = {};
  for (const p of PROVIDERS) {
    const t = d.tokens[p];
    const stored = Object.hasOwn(s?.provider_tokens_set ?? {}, p);
    if (t.remove) tokens[p] = null;
    else if (t.token || (stored && (t.host || null) !== (s?.provider_tokens_set?.[p] ?? null)))
      tokens[p] = { token: t.token || null, host: t.host || null };
  }
  return {
    ...(fields as SettingsBody),
    mcp_config: {
      sse_servers: remote(d.sse),
      shttp_servers: remote(d.shttp),
      stdio_servers: d.stdio.map((r) => ({
        name: r.name.trim(),
        command: r.command,
        args: r.args.split('\n').filter((a) => a !== ''),
        env: Object.fromEntries(r.env.filter((e) => e.key).map((e) => [e.key, e.value || null])),
      })),
    },
    secrets_store: { custom_secrets: custom, provider_tokens: tokens },
  };
}
