import type { PublicSettings } from '#shared/settings/model.ts';

export interface SettingsRecord {
  userId: string;
  /** Incremented by every save; the condition of the next one. */
  version: number;
  updatedAt: string;
  values: PublicSettings;
  /** The sealed SecretsDoc (absent when the user has no secret at all). */
  sealed?: string;
  /** What GET shows about the secrets without opening them. */
  secretsSummary: SecretsSummary;
}

export interface SecretsSummary {
  llm_api_key_set: boolean;
  search_api_key_set: boolean;
  sandbox_api_key_set: boolean;
  provider_tokens_set: Record<string, string | null>;
  custom_secrets: Record<string, { description: string | null }>;
  /** The MCP config with keys and env values replaced by null. */
  mcp_config: import('#shared/settings/model.ts').McpConfig;
}

/** Per-user settings storage. Adapters: `DynamoSettingsStore`. */
export interface SettingsStore {
  get(userId: string): Promise<SettingsRecord | undefined>;
  /**
   * Writes `record` if the stored version is still `expectedVersion` (0: nothing stored yet).
   * Returns false when another save got there first.
   */
  put(record: SettingsRecord, expectedVersion: number): Promise<boolean>;
}
