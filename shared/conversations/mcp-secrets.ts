import { invalidField } from '#shared/http/errors.ts';
import type { McpConfigInput } from '#shared/settings/model.ts';

/**
 * A conversation's own MCP secrets (`mcp_config` of a start request): the `api_key` of each remote
 * server and the `env` values of each stdio server. They are sealed apart from the start-task record,
 * which keeps the config with those values null (plus `*_set` flags), so the record and every
 * response that shows the request (the start response, `start-tasks`, `start-tasks/search`) hold no
 * secret. The start-config bridge route puts them back for the sandbox.
 */
export interface McpSecrets {
  sse: (string | null)[];
  shttp: (string | null)[];
  stdio: Record<string, string>[];
}

/** KMS encrypts at most 4 KB of plaintext; the sealed document must fit. */
export const MAX_MCP_SECRETS_BYTES = 4096;

type Remote = { url: string; api_key?: string | null; api_key_set?: boolean };
type Stdio = { name: string; command: string; args: string[]; env: Record<string, string | null>; env_set?: boolean };
type AnyMcp = { sse_servers?: Remote[]; shttp_servers?: Remote[]; stdio_servers?: Stdio[] };

const setValues = (env: Record<string, string | null>) =>
  Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'));

/** The secrets of a request's MCP config, or null when it has none. */
export function mcpSecretsOf(mcp: McpConfigInput | null | undefined): McpSecrets | null {
  if (!mcp) return null;
  const secrets: McpSecrets = {
    sse: mcp.sse_servers.map((s) => s.api_key ?? null),
    shttp: mcp.shttp_servers.map((s) => s.api_key ?? null),
    stdio: mcp.stdio_servers.map((s) => setValues(s.env)),
  };
  const any = [...secrets.sse, ...secrets.shttp].some(Boolean) || secrets.stdio.some((e) => Object.keys(e).length > 0);
  if (!any) return null;
  if (Buffer.byteLength(JSON.stringify(secrets)) > MAX_MCP_SECRETS_BYTES) {
    throw invalidField(
      ['body', 'mcp_config'],
      `the api_key and env values of mcp_config may total at most ${MAX_MCP_SECRETS_BYTES} bytes`,
    );
  }
  return secrets;
}

/** The config as it may be stored and shown: secret values null, `api_key_set`/`env_set` saying which were given. Idempotent. */
export function maskMcp<T extends AnyMcp | null | undefined>(mcp: T): T {
  if (!mcp) return mcp;
  const remote = (s: Remote) => ({
    url: s.url,
    api_key: null,
    api_key_set: Boolean(s.api_key) || s.api_key_set === true,
  });
  return {
    ...mcp,
    sse_servers: (mcp.sse_servers ?? []).map(remote),
    shttp_servers: (mcp.shttp_servers ?? []).map(remote),
    stdio_servers: (mcp.stdio_servers ?? []).map((s) => ({
      name: s.name,
      command: s.command,
      args: s.args,
      env: Object.fromEntries(Object.keys(s.env).map((k) => [k, null])),
      env_set: Object.values(s.env).some((v) => typeof v === 'string') || s.env_set === true,
    })),
  } as T;
}

/** The masked config with its sealed secrets put back (what the sandbox gets). */
export function unmaskMcp(masked: AnyMcp, secrets: McpSecrets | null): McpConfigInput {
  return {
    sse_servers: (masked.sse_servers ?? []).map((s, i) => ({ url: s.url, api_key: secrets?.sse[i] ?? null })),
    shttp_servers: (masked.shttp_servers ?? []).map((s, i) => ({ url: s.url, api_key: secrets?.shttp[i] ?? null })),
    stdio_servers: (masked.stdio_servers ?? []).map((s, i) => ({
      name: s.name,
      command: s.command,
      args: s.args,
      env: { ...(secrets?.stdio[i] ?? {}) },
    })),
  };
}
