import { conflict, notFound } from '#shared/http/errors.ts';
import type { Sealer } from '#shared/secrets/sealer.ts';
import {
  keepOnNull,
  secretFields,
  settingsDefaults,
  settingsFieldNames,
  type McpConfig,
  type McpConfigInput,
  type PublicSettings,
  type ResolvedSettings,
  type SecretsDoc,
  type SettingsInput,
} from '#shared/settings/model.ts';
import type { SecretsSummary, SettingsRecord, SettingsStore } from '#shared/settings/settings-store.ts';

const emptySecrets = (): SecretsDoc => ({
  provider_tokens: {},
  custom_secrets: {},
  mcp_config: { sse_servers: [], stdio_servers: [], shttp_servers: [] },
});

/** The view GET gives: values, secrets as null, and flags saying which secrets are set. */
export type MaskedSettings = ReturnType<typeof mask>;

function mask(record: SettingsRecord) {
  const s = record.secretsSummary;
  return {
    ...Object.fromEntries(settingsFieldNames().map((f) => [f, null])),
    ...record.values,
    llm_api_key: null,
    search_api_key: null,
    sandbox_api_key: null,
    secrets_store: {
      provider_tokens: Object.fromEntries(
        Object.entries(s.provider_tokens_set).map(([p, host]) => [p, { token: null, host }]),
      ),
      custom_secrets: Object.fromEntries(
        Object.entries(s.custom_secrets).map(([name, { description }]) => [name, { secret: null, description }]),
      ),
    },
    mcp_config: s.mcp_config,
    llm_api_key_set: s.llm_api_key_set,
    search_api_key_set: s.search_api_key_set,
    sandbox_api_key_set: s.sandbox_api_key_set,
    provider_tokens_set: s.provider_tokens_set,
  };
}

export class SettingsService {
  constructor(
    private readonly store: SettingsStore,
    private readonly sealer: Sealer,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Masked settings; 404 before the user stored any. */
  async get(userId: string): Promise<MaskedSettings> {
    const record = await this.store.get(userId);
    if (!record) throw notFound('Settings not found');
    return mask(record);
  }

  /** Masked settings, or null when none were stored (for /users/me). */
  async find(userId: string): Promise<MaskedSettings | null> {
    const record = await this.store.get(userId);
    return record ? mask(record) : null;
  }

  /** Settings with secrets opened, for starting an agent; null when none were stored. */
  async resolve(userId: string): Promise<ResolvedSettings | null> {
    const record = await this.store.get(userId);
    if (!record) return null;
    const secrets = await this.openSecrets(record);
    return {
      ...record.values,
      llm_api_key: secrets.llm_api_key ?? null,
      search_api_key: secrets.search_api_key ?? null,
      sandbox_api_key: secrets.sandbox_api_key ?? null,
      secrets_store: { provider_tokens: secrets.provider_tokens, custom_secrets: secrets.custom_secrets },
      mcp_config: secrets.mcp_config,
    };
  }

  /** Seals another secret of the user's (a conversation's MCP keys) as settings secrets are sealed: bound to the user. */
  sealFor(userId: string, plaintext: string): Promise<string> {
    return this.sealer.seal(plaintext, userId);
  }

  openFor(userId: string, sealed: string): Promise<string> {
    return this.sealer.open(sealed, userId);
  }

  /**
   * Merges `input` into the stored settings: an absent field keeps its value, a null clears it
   * except for the keep-on-null fields, "" clears a secret. The write is conditional on the version
   * read, retried a few times, so concurrent saves never lose each other's fields.
   */
  async save(userId: string, input: SettingsInput): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const previous = await this.store.get(userId);
      const record = await this.merge(userId, previous, input);
      if (await this.store.put(record, previous?.version ?? 0)) return;
    }
    throw conflict('Settings were changed by another request at the same time; try again');
  }

  private async merge(userId: string, previous: SettingsRecord | undefined, input: SettingsInput): Promise<SettingsRecord> {
    const values: Record<string, unknown> = previous ? { ...previous.values } : { ...settingsDefaults };
    for (const field of settingsFieldNames()) {
      if (field === 'secrets_store' || field === 'mcp_config' || (secretFields as readonly string[]).includes(field)) continue;
      const value = input[field];
      if (value === undefined || (value === null && keepOnNull.has(field))) continue;
      values[field] = value;
    }

    const secrets = previous ? await this.openSecrets(previous) : emptySecrets();
    for (const field of secretFields) {
      const value = input[field];
      if (value === undefined || value === null) continue;
      if (value === '') delete secrets[field];
      else secrets[field] = value;
    }
    mergeSecretsStore(secrets, input.secrets_store);
    if (input.mcp_config) secrets.mcp_config = mergeMcp(secrets.mcp_config, input.mcp_config);

    const summary = summarize(secrets);
    const hasSecrets =
      secretFields.some((f) => secrets[f] !== undefined) ||
      Object.keys(secrets.provider_tokens).length > 0 ||
      Object.keys(secrets.custom_secrets).length > 0 ||
      JSON.stringify(secrets.mcp_config) !== JSON.stringify(summary.mcp_config);
    return {
      userId,
      version: (previous?.version ?? 0) + 1,
      updatedAt: this.now().toISOString(),
      values: values as PublicSettings,
      sealed: hasSecrets ? await this.sealer.seal(JSON.stringify(secrets), userId) : undefined,
      secretsSummary: summary,
    };
  }

  private async openSecrets(record: SettingsRecord): Promise<SecretsDoc> {
    if (!record.sealed) return { ...emptySecrets(), mcp_config: record.secretsSummary.mcp_config };
    return { ...emptySecrets(), ...(JSON.parse(await this.sealer.open(record.sealed, record.userId)) as SecretsDoc) };
  }
}

function mergeSecretsStore(secrets: SecretsDoc, input: SettingsInput['secrets_store']): void {
  for (const [provider, entry] of Object.entries(input?.provider_tokens ?? {})) {
    const p = provider as keyof SecretsDoc['provider_tokens'];
    const old = secrets.provider_tokens[p];
    if (entry === null || entry === undefined || entry.token === '') {
      delete secrets.provider_tokens[p];
      continue;
    }
    const token = entry.token ?? old?.token;
    if (!token) continue; // nothing to keep and nothing given: no provider to store
    secrets.provider_tokens[p] = {
      token,
      host: entry.host === undefined ? (old?.host ?? null) : entry.host,
      user_id: entry.user_id === undefined ? (old?.user_id ?? null) : entry.user_id,
    };
  }
  for (const [name, entry] of Object.entries(input?.custom_secrets ?? {})) {
    const old = secrets.custom_secrets[name];
    if (entry === null || entry === '' || (typeof entry === 'object' && entry.secret === '')) {
      delete secrets.custom_secrets[name];
      continue;
    }
    const secret = typeof entry === 'string' ? entry : (entry.secret ?? old?.secret);
    if (!secret) continue;
    const description = typeof entry === 'string' || entry.description === undefined ? (old?.description ?? null) : entry.description;
    secrets.custom_secrets[name] = { secret, description };
  }
}

/** A new MCP config replaces the old one; a null key or env value keeps the one stored for the same server. */
function mergeMcp(old: McpConfig, input: McpConfigInput): McpConfig {
  const remote = (list: McpConfigInput['sse_servers'], before: McpConfig['sse_servers']) =>
    list.map((s) => ({ url: s.url, api_key: s.api_key ?? before.find((b) => b.url === s.url)?.api_key ?? null }));
  return {
    sse_servers: remote(input.sse_servers, old.sse_servers),
    shttp_servers: remote(input.shttp_servers, old.shttp_servers),
    stdio_servers: input.stdio_servers.map((s) => {
      const before = old.stdio_servers.find((b) => b.name === s.name);
      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries(s.env)) {
        const value = v ?? before?.env[k];
        if (value !== null && value !== undefined) env[k] = value;
      }
      return { name: s.name, command: s.command, args: s.args, env };
    }),
  };
}

function summarize(secrets: SecretsDoc): SecretsSummary {
  const mcp = secrets.mcp_config;
  return {
    llm_api_key_set: Boolean(secrets.llm_api_key),
    search_api_key_set: Boolean(secrets.search_api_key),
    sandbox_api_key_set: Boolean(secrets.sandbox_api_key),
    provider_tokens_set: Object.fromEntries(Object.entries(secrets.provider_tokens).map(([p, t]) => [p, t?.host ?? null])),
    custom_secrets: Object.fromEntries(
      Object.entries(secrets.custom_secrets).map(([name, s]) => [name, { description: s.description }]),
    ),
    mcp_config: {
      sse_servers: mcp.sse_servers.map((s) => ({ url: s.url, api_key: null })),
      shttp_servers: mcp.shttp_servers.map((s) => ({ url: s.url, api_key: null })),
      stdio_servers: mcp.stdio_servers.map((s) => ({
        ...s,
        env: Object.fromEntries(Object.keys(s.env).map((k) => [k, null])),
      })),
    },
  };
}
