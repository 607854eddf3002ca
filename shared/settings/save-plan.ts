import {
  keepOnNull,
  secretFields,
  settingsDefaults,
  settingsFieldNames,
  type SettingsInput,
} from '#shared/settings/model.ts';
import type { SettingsPatch, SettingsPath, SettingsRecord } from '#shared/settings/settings-store.ts';

/** Where each secret is sealed in `SettingsRecord.secrets`. */
export const secretKey = {
  provider: (provider: string) => `provider:${provider}`,
  custom: (name: string) => `custom:${name}`,
  remote: (kind: 'sse' | 'shttp', url: string) => `mcp:${kind}:${url}`,
  env: (server: string, name: string) => `mcp:stdio:${server}:${name}`,
};

/** A secret of the body, in a patch until the service seals it; `loc` is where the body gave it. */
export class Plaintext {
  constructor(
    readonly text: string,
    readonly loc: (string | number)[] = [],
  ) {}
}

const SUMMARY = 'secretsSummary';

/** A record of the per-field format with nothing stored yet: what a first save starts from. */
export const emptyRecord = (userId: string): SettingsRecord => ({
  userId,
  version: 0,
  updatedAt: '',
  values: { ...settingsDefaults },
  secrets: {},
  mcpListed: {},
  providerUserIds: {},
  secretsSummary: {
    llm_api_key_set: false,
    search_api_key_set: false,
    sandbox_api_key_set: false,
    provider_tokens_set: {},
    custom_secrets: {},
    mcp_config: { sse_servers: [], stdio_servers: [], shttp_servers: [] },
  },
});

/**
 * A save as a patch, by the merge rules of docs/architecture.md ("Settings semantics"). With `known`
 * (the stored record) every "keep what is stored" is decided here; without it the patch says what it
 * assumes (`assume`: a null that keeps a secret needs that secret stored) and the store checks it
 * in the same write, so a save needs no read. Secrets are `Plaintext` until sealed.
 */
export function planSave(input: SettingsInput, known?: SettingsRecord): SettingsPatch {
  const patch: SettingsPatch = { set: [], remove: [], assume: [] };
  // One change per place (DynamoDB refuses overlapping paths): a later change of the same place wins.
  const byPath = new Map<string, SettingsPatch['set'][number]>();
  const set = (path: SettingsPath, value: unknown, ifAbsent = false) =>
    byPath.set(path.join('\0'), { path, value, ifAbsent });
  const remove = (path: SettingsPath) => patch.remove.push(path);
  const has = (path: SettingsPath) => {
    if (known) return hasPath(known, path);
    patch.assume.push({ exists: path });
    return true;
  };

  for (const field of settingsFieldNames()) {
    if (field === 'secrets_store' || field === 'mcp_config' || (secretFields as readonly string[]).includes(field))
      continue;
    const value = input[field];
    if (value === undefined || (value === null && keepOnNull.has(field))) continue;
    set(['values', field], value);
  }

  for (const field of secretFields) {
    const value = input[field];
    if (value === undefined || value === null) continue;
    if (value === '') remove(['secrets', field]);
    else set(['secrets', field], new Plaintext(value, [field]));
    set([SUMMARY, `${field}_set`], value !== '');
  }

  for (const [provider, entry] of Object.entries(input.secrets_store?.provider_tokens ?? {})) {
    const key = ['secrets', secretKey.provider(provider)];
    if (entry === null || entry === undefined || entry.token === '') {
      remove(key);
      remove([SUMMARY, 'provider_tokens_set', provider]);
      remove(['providerUserIds', provider]);
      continue;
    }
    if (entry.token) set(key, new Plaintext(entry.token, ['secrets_store', 'provider_tokens', provider, 'token']));
    else if (!has(key)) continue; // nothing to keep and nothing given: no provider to store
    // Not given: the stored host and user id stay (null for a new provider).
    set([SUMMARY, 'provider_tokens_set', provider], entry.host ?? null, entry.host === undefined);
    set(['providerUserIds', provider], entry.user_id ?? null, entry.user_id === undefined);
  }

  for (const [name, entry] of Object.entries(input.secrets_store?.custom_secrets ?? {})) {
    const key = ['secrets', secretKey.custom(name)];
    const summary = [SUMMARY, 'custom_secrets', name];
    if (entry === null || entry === '' || (typeof entry === 'object' && entry.secret === '')) {
      remove(key);
      remove(summary);
      continue;
    }
    const secret = typeof entry === 'string' ? entry : entry.secret;
    if (secret)
      set(
        key,
        new Plaintext(secret, [
          'secrets_store',
          'custom_secrets',
          name,
          ...(typeof entry === 'string' ? [] : ['secret']),
        ]),
      );
    else if (!has(key)) continue;
    const description = typeof entry === 'string' ? undefined : entry.description;
    set(summary, { description: description ?? null }, description === undefined);
  }

  if (input.mcp_config) {
    const mcp = input.mcp_config;
    const listed: Record<string, true> = {};
    // A remote server's key: given, sealed; null keeps what is stored, if anything (a value left
    // from an earlier config, not listed, is nothing: assumed away, or decided by `known`).
    const remote = (kind: 'sse' | 'shttp', list: typeof mcp.sse_servers) =>
      list.map((s, i) => {
        const key = secretKey.remote(kind, s.url);
        listed[key] = true;
        if (s.api_key !== null && s.api_key !== undefined)
          set(['secrets', key], new Plaintext(s.api_key, ['mcp_config', `${kind}_servers`, i, 'api_key']));
        else if (!known) patch.assume.push({ absent: ['secrets', key], exists: ['mcpListed', key] });
        return { url: s.url, api_key: null };
      });
    // A stdio variable: given, sealed; null keeps the stored value, and without one the variable goes.
    const env = (given: string | null | undefined, key: string, loc: (string | number)[]) => {
      if (given !== null && given !== undefined) set(['secrets', key], new Plaintext(given, loc));
      else if (!has(['mcpListed', key])) return false;
      listed[key] = true;
      return true;
    };
    set([SUMMARY, 'mcp_config'], {
      sse_servers: remote('sse', mcp.sse_servers),
      shttp_servers: remote('shttp', mcp.shttp_servers),
      stdio_servers: mcp.stdio_servers.map((s, i) => ({
        name: s.name,
        command: s.command,
        args: s.args,
        env: Object.fromEntries(
          Object.entries(s.env).flatMap(([k, v]) =>
            env(v, secretKey.env(s.name, k), ['mcp_config', 'stdio_servers', i, 'env', k]) ? [[k, null]] : [],
          ),
        ),
      })),
    });
    // The values of servers and variables no longer listed are removed by the service (`staleMcpKeys`).
    set(['mcpListed'], listed);
  }
  patch.set = [...byPath.values()];
  return patch;
}

/** Sealed MCP values the config no longer lists (left by a save that replaced it without reading). */
export const staleMcpKeys = (record: SettingsRecord): string[] =>
  Object.keys(record.secrets ?? {}).filter((k) => k.startsWith('mcp:') && !record.mcpListed?.[k]);

/** `patch` applied to a copy of `record`, as the store's update applies it. */
export function applyPatch(record: SettingsRecord, patch: SettingsPatch): SettingsRecord {
  const out = structuredClone(record);
  const parentOf = (path: SettingsPath) => {
    let node = out as unknown as Record<string, unknown>;
    for (const segment of path.slice(0, -1)) node = node[segment] as Record<string, unknown>;
    return node;
  };
  for (const path of patch.remove) delete parentOf(path)[path.at(-1)!];
  for (const { path, value, ifAbsent } of patch.set) {
    const parent = parentOf(path);
    const key = path.at(-1)!;
    // defineProperty: a name such as `__proto__` (a valid custom secret name) is an own entry, as in the table.
    if (!(ifAbsent && Object.hasOwn(parent, key)))
      Object.defineProperty(parent, key, {
        value: structuredClone(value),
        enumerable: true,
        writable: true,
        configurable: true,
      });
  }
  return out;
}

function hasPath(record: SettingsRecord, path: SettingsPath): boolean {
  let node: unknown = record;
  for (const segment of path) {
    if (!node || typeof node !== 'object' || !Object.hasOwn(node, segment)) return false;
    node = (node as Record<string, unknown>)[segment];
  }
  return true;
}
