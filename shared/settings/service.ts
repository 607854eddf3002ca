import { conflict, invalidField, notFound } from '#shared/http/errors.ts';
import type { Sealer } from '#shared/secrets/sealer.ts';
import {
  secretFields,
  settingsFieldNames,
  type McpConfig,
  type ResolvedSettings,
  type SecretsDoc,
  type SettingsInput,
} from '#shared/settings/model.ts';
import { applyPatch, emptyRecord, planSave, Plaintext, secretKey, staleMcpKeys } from '#shared/settings/save-plan.ts';
import type { SettingsPatch, SettingsRecord, SettingsStore } from '#shared/settings/settings-store.ts';

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
   * except for the keep-on-null fields, "" clears a secret. Usually one write that changes only what
   * the body names and checks what it assumed (no read, nothing opened, only the given secrets
   * sealed); when that cannot apply (first save, a record of the earlier format, a null with nothing
   * stored to keep, a change too large for one update) it reads, merges and writes conditionally on
   * the version read, retried a few times. Either way concurrent saves never lose each other's fields.
   */
  async save(userId: string, input: SettingsInput): Promise<void> {
    rejectCredentialsInUrls(input);
    const sealed = new Map<string, Promise<string>>(); // each secret sealed once, whichever way the save goes
    const seal = (patch: SettingsPatch) => this.sealPatch(userId, patch, sealed);
    const patch = planSave(input);
    rejectLongSecrets(patch);
    await seal(patch);
    const written = await this.store.update(userId, patch, this.now().toISOString());
    if (written) return this.dropStale(written);
    for (let attempt = 0; attempt < 5; attempt++) {
      const previous = await this.store.get(userId);
      const base = previous?.secrets ? previous : await this.migrate(userId, previous);
      for (const key of staleMcpKeys(base)) delete base.secrets![key]; // so that a null keeps none of them
      const merged = planSave(input, base);
      await seal(merged);
      const record = applyPatch(base, merged);
      for (const key of staleMcpKeys(record)) delete record.secrets![key];
      Object.assign(record, { version: (previous?.version ?? 0) + 1, updatedAt: this.now().toISOString() });
      if (await this.store.put(record, previous?.version ?? 0)) return;
    }
    throw conflict('Settings were changed by another request at the same time; try again');
  }

  /** The names and descriptions of the user's custom secrets (never their values); none before any settings. */
  async customSecrets(userId: string): Promise<{ name: string; description: string | null }[]> {
    const record = await this.store.get(userId);
    return Object.entries(record?.secretsSummary.custom_secrets ?? {}).map(([name, { description }]) => ({
      name,
      description,
    }));
  }

  /** Adds a custom secret; 409 when one of that name exists (checked in the write, so racing creates add one). */
  async createCustomSecret(userId: string, name: string, value: string, description: string | null): Promise<void> {
    const patch = planSave({ secrets_store: { custom_secrets: { [name]: { secret: value, description } } } });
    patch.assume.push({ absent: ['secrets', secretKey.custom(name)] });
    await this.applyChecked(userId, patch, (record) => {
      if (record && Object.hasOwn(record.secretsSummary.custom_secrets, name))
        throw conflict(`Secret ${name} already exists`);
    });
  }

  /**
   * Renames a custom secret and/or sets its description, keeping its value; 404 when there is no such
   * secret, 409 when the new name is taken (both checked in the write).
   */
  async updateCustomSecret(userId: string, id: string, name: string, description: string | null): Promise<void> {
    const exists = (record?: SettingsRecord) => {
      if (!record || !Object.hasOwn(record.secretsSummary.custom_secrets, id)) throw notFound(`Secret ${id} not found`);
    };
    let patch: SettingsPatch;
    if (name === id) {
      patch = planSave({ secrets_store: { custom_secrets: { [id]: { description } } } });
    } else {
      exists(await this.store.get(userId));
      const value = (await this.resolve(userId))?.secrets_store.custom_secrets[id]?.secret;
      if (value === undefined) throw notFound(`Secret ${id} not found`);
      patch = planSave({ secrets_store: { custom_secrets: { [id]: null, [name]: { secret: value, description } } } });
      patch.assume.push({ absent: ['secrets', secretKey.custom(name)] });
    }
    patch.assume.push({ exists: ['secrets', secretKey.custom(id)] });
    await this.applyChecked(userId, patch, (record) => {
      exists(record);
      if (name !== id && Object.hasOwn(record!.secretsSummary.custom_secrets, name))
        throw conflict(`Secret ${name} already exists`);
    });
  }

  /** Removes a custom secret; 404 when there is none of that name. */
  async deleteCustomSecret(userId: string, id: string): Promise<void> {
    const patch = planSave({ secrets_store: { custom_secrets: { [id]: null } } });
    patch.assume.push({ exists: ['secrets', secretKey.custom(id)] });
    await this.applyChecked(userId, patch, (record) => {
      if (!record || !Object.hasOwn(record.secretsSummary.custom_secrets, id)) throw notFound(`Secret ${id} not found`);
    });
  }

  /** Removes every git provider token (and its host). */
  async unsetProviderTokens(userId: string): Promise<void> {
    const record = await this.store.get(userId);
    const providers = Object.keys(record?.secretsSummary.provider_tokens_set ?? {});
    if (providers.length === 0) return;
    await this.save(userId, {
      secrets_store: { provider_tokens: Object.fromEntries(providers.map((p) => [p, null])) },
    } as SettingsInput);
  }

  /**
   * Writes `patch` in one conditional update, whose assumptions carry the caller's precondition. When it
   * is refused, `check` reads why from the stored record (and throws the 404 or 409); when the record
   * was missing or of an earlier format (the precondition holds), an empty save makes one of the
   * per-field format and the update runs again.
   */
  private async applyChecked(
    userId: string,
    patch: SettingsPatch,
    check: (record: SettingsRecord | undefined) => void,
  ): Promise<void> {
    rejectLongSecrets(patch);
    await this.sealPatch(userId, patch, new Map());
    for (let attempt = 0; attempt < 3; attempt++) {
      if (await this.store.update(userId, patch, this.now().toISOString())) return;
      check(await this.store.get(userId));
      await this.save(userId, {} as SettingsInput);
    }
    throw conflict('Settings were changed by another request at the same time; try again');
  }

  /** Removes the values of MCP servers and variables a save dropped from the config, unless listed again since. */
  private async dropStale(record: SettingsRecord): Promise<void> {
    const stale = staleMcpKeys(record);
    if (stale.length === 0) return;
    const patch = {
      set: [],
      remove: stale.map((k) => ['secrets', k]),
      assume: stale.map((k) => ({ absent: ['mcpListed', k] })),
    };
    // Refused only when a save listed one again meanwhile; whatever is left, the next save removes.
    await this.store.update(record.userId, patch, this.now().toISOString());
  }

  private async sealPatch(userId: string, patch: SettingsPatch, cache: Map<string, Promise<string>>): Promise<void> {
    await Promise.all(
      patch.set.map(async (change) => {
        if (!(change.value instanceof Plaintext)) return;
        const text = change.value.text;
        if (!cache.has(text)) cache.set(text, this.sealer.seal(text, userId));
        change.value = await cache.get(text)!;
      }),
    );
  }

  /** A record of the per-field format from one of the earlier format (or none): its secrets sealed one by one. */
  private async migrate(userId: string, old: SettingsRecord | undefined): Promise<SettingsRecord> {
    const empty = emptyRecord(userId);
    if (!old) return empty;
    const doc = await this.openSecrets(old);
    const patch = planSave(
      {
        ...doc,
        secrets_store: { provider_tokens: doc.provider_tokens, custom_secrets: doc.custom_secrets },
        mcp_config: doc.mcp_config,
      } as SettingsInput,
      empty,
    );
    await this.sealPatch(userId, patch, new Map());
    return { ...applyPatch({ ...empty, values: old.values }, patch), version: old.version, updatedAt: old.updatedAt };
  }

  /** Every secret of a record in the clear. */
  private async openSecrets(record: SettingsRecord): Promise<SecretsDoc> {
    if (record.secrets) return this.openFields(record, record.secrets);
    if (!record.sealed) return { ...emptySecrets(), mcp_config: record.secretsSummary.mcp_config };
    return { ...emptySecrets(), ...(JSON.parse(await this.sealer.open(record.sealed, record.userId)) as SecretsDoc) };
  }

  private async openFields(record: SettingsRecord, secrets: Record<string, string>): Promise<SecretsDoc> {
    const stale = new Set(staleMcpKeys(record));
    const opened = new Map(
      await Promise.all(
        Object.entries(secrets)
          .filter(([key]) => !stale.has(key))
          .map(async ([key, sealed]) => [key, await this.sealer.open(sealed, record.userId)] as const),
      ),
    );
    const s = record.secretsSummary;
    const remote = (kind: 'sse' | 'shttp', list: McpConfig['sse_servers']) =>
      list.map((server) => ({ url: server.url, api_key: opened.get(secretKey.remote(kind, server.url)) ?? null }));
    return {
      ...Object.fromEntries(secretFields.flatMap((f) => (opened.has(f) ? [[f, opened.get(f)]] : []))),
      provider_tokens: Object.fromEntries(
        Object.entries(s.provider_tokens_set).map(([p, host]) => [
          p,
          { token: opened.get(secretKey.provider(p))!, host, user_id: record.providerUserIds?.[p] ?? null },
        ]),
      ),
      custom_secrets: Object.fromEntries(
        Object.entries(s.custom_secrets).map(([name, { description }]) => [
          name,
          { secret: opened.get(secretKey.custom(name))!, description },
        ]),
      ),
      mcp_config: {
        sse_servers: remote('sse', s.mcp_config.sse_servers),
        shttp_servers: remote('shttp', s.mcp_config.shttp_servers),
        stdio_servers: s.mcp_config.stdio_servers.map((server) => ({
          ...server,
          env: Object.fromEntries(Object.keys(server.env).map((k) => [k, opened.get(secretKey.env(server.name, k))!])),
        })),
      },
    };
  }
}

/** KMS seals at most 4 KB of plaintext, and each secret is sealed on its own. */
const MAX_SECRET_BYTES = 4096;

/** A secret longer than one seal takes is a 422 naming it, here and on AWS alike (never KMS's error, a 500). */
function rejectLongSecrets(patch: SettingsPatch): void {
  for (const { value } of patch.set) {
    if (value instanceof Plaintext && Buffer.byteLength(value.text) > MAX_SECRET_BYTES) {
      throw invalidField(
        ['body', ...value.loc],
        `must be at most ${MAX_SECRET_BYTES} bytes (each secret is sealed on its own, and a seal takes at most 4 KB)`,
      );
    }
  }
}

/**
 * A URL with `user:password@` would be shown as-is by GET (only secrets are masked): refused, so a
 * credential goes where it is sealed (`llm_api_key`, an MCP server's `api_key`).
 */
function rejectCredentialsInUrls(input: SettingsInput): void {
  const check = (loc: (string | number)[], url: string | null | undefined) => {
    if (!url || !URL.canParse(url)) return;
    const { username, password } = new URL(url);
    if (username || password)
      throw invalidField(
        ['body', ...loc],
        'must not carry credentials (user:password@); give the key in its own field, which is stored sealed',
      );
  };
  check(['llm_base_url'], input.llm_base_url);
  for (const kind of ['sse_servers', 'shttp_servers'] as const)
    for (const [i, s] of (input.mcp_config?.[kind] ?? []).entries()) check(['mcp_config', kind, i, 'url'], s.url);
}
