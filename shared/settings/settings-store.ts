import type { McpConfig, PublicSettings } from '#shared/settings/model.ts';

export interface SettingsRecord {
  userId: string;
  /** Incremented by every save; the condition of a save that had to read first. */
  version: number;
  updatedAt: string;
  values: PublicSettings;
  /**
   * Each secret sealed on its own, by key (`secretKey` in save-plan.ts), so a save seals only what it
   * is given and never opens anything. Absent on a record of the earlier format (`sealed`).
   */
  secrets?: Record<string, string>;
  /**
   * The `secrets` keys the current MCP config lists (every remote server's key, each stdio variable
   * with a value): a value under a key not listed is left from a config replaced since, never used.
   */
  mcpListed?: Record<string, true>;
  /** Provider user ids (plain, not shown by GET). */
  providerUserIds?: Record<string, string | null>;
  /** The earlier format: every secret as one sealed document; read, and rewritten by the next save. */
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
  mcp_config: McpConfig;
}

/** A place in the record: an attribute, then map keys. */
export type SettingsPath = readonly string[];

/**
 * One save as changes to places of a record, applied in one conditional write. `ifAbsent` sets a
 * place only when it holds nothing yet. `assume` is what the save took for granted about places it
 * did not read (a null that keeps a stored secret needs that secret to be there): each entry holds
 * when its `exists` place exists or its `absent` place does not.
 */
export interface SettingsPatch {
  set: { path: SettingsPath; value: unknown; ifAbsent?: boolean }[];
  remove: SettingsPath[];
  assume: { exists?: SettingsPath; absent?: SettingsPath }[];
}

/** Per-user settings storage. Adapters: `DynamoSettingsStore`. */
export interface SettingsStore {
  get(userId: string): Promise<SettingsRecord | undefined>;
  /**
   * Writes `record` whole if the stored version is still `expectedVersion` (0: nothing stored yet).
   * Returns false when another save got there first.
   */
  put(record: SettingsRecord, expectedVersion: number): Promise<boolean>;
  /**
   * Applies `patch` to a stored record of the per-field format, increments its version and sets
   * `updatedAt`, without reading it first. Returns the record as written, or undefined when there
   * is no such record, an assumption of the patch does not hold, or the patch is too large for one
   * update (nothing written).
   */
  update(userId: string, patch: SettingsPatch, updatedAt: string): Promise<SettingsRecord | undefined>;
}
