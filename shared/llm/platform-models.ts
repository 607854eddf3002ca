import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as z from '#shared/zod.ts';

/*
 * Platform models: the models the operator offers and pays for (config/platform-llms.json locally,
 * `PLATFORM_LLMS_FILE` to replace it; the CDK context `platformLlms` on AWS, env PLATFORM_LLMS). This
 * file is the only place model prices live, and the only place an upstream base URL comes from (a
 * user's settings never name where the platform's key is sent: no SSRF through settings).
 */

const usdPerMtok = z.number().check(z.gte(0), z.lte(100_000));
const modelSchema = z.strictObject({
  /** The public name users put in `llm_model`, e.g. `platform/claude-sonnet`. */
  model: z.string().check(z.regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/, 'a model name: letters, digits, . _ : / -')),
  provider: z.enum(['openai', 'anthropic']),
  upstream_model: z.string().check(z.minLength(1), z.maxLength(256)),
  base_url: z.url({ protocol: /^https?$/, error: 'an http(s) URL, e.g. https://api.openai.com/v1' }),
  /** Locally: the environment variable holding the upstream key (never the key itself). */
  api_key_env: z.optional(z.string().check(z.regex(/^[A-Z_][A-Z0-9_]*$/, 'an environment variable name'))),
  /** On AWS: an SSM SecureString parameter or a Secrets Manager secret holding the key (its ARN, never its value). */
  api_key_arn: z.optional(
    z.string().check(z.regex(/^arn:aws[a-z-]*:(ssm|secretsmanager):/, 'an SSM parameter or Secrets Manager ARN')),
  ),
  usd_per_mtok: z.strictObject({
    input: usdPerMtok,
    output: usdPerMtok,
    cached_input: z.optional(usdPerMtok),
    cache_write_input: z.optional(usdPerMtok),
  }),
  /** 0.2 = 20 % on top of the upstream price. */
  markup: z._default(z.number().check(z.gte(0), z.lte(100)), 0),
  max_output_tokens: z.number().check(z.int(), z.gt(0), z.lte(1_000_000)),
});
export const platformModelsSchema = z.array(modelSchema).check(
  z.refine((ms) => new Set(ms.map((m) => m.model)).size === ms.length, 'each model name may appear only once'),
  z.refine(
    (ms) => ms.every((m) => m.api_key_env || m.api_key_arn),
    'each model needs api_key_env (locally) or api_key_arn (on AWS)',
  ),
);
export type PlatformModel = z.output<typeof modelSchema>;

export interface PlatformModels {
  readonly list: readonly PlatformModel[];
  /** The platform model of this public name, or undefined (then it is a user-key model). */
  get(model: string | null | undefined): PlatformModel | undefined;
}

export function parsePlatformModels(raw: unknown, source: string): PlatformModels {
  const parsed = platformModelsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`Configuration error: ${source} at ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  const byName = new Map(parsed.data.map((m) => [m.model, Object.freeze(m)]));
  return { list: [...byName.values()], get: (model) => (model ? byName.get(model) : undefined) };
}

/** Local: the JSON file `path` (`PLATFORM_LLMS_FILE`, default `config/platform-llms.json`), checked when read. */
export function filePlatformModels(path: string): PlatformModels {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`Configuration error: PLATFORM_LLMS_FILE: cannot read ${path}: ${(err as Error).message}`);
  }
  return parsePlatformModels(raw, `PLATFORM_LLMS_FILE ${path}`);
}

/** AWS: the JSON the CDK app writes into PLATFORM_LLMS from the context key `platformLlms` (empty: none offered). */
export function envPlatformModels(value: string | undefined): PlatformModels {
  if (!value) return parsePlatformModels([], 'the built-in platform models');
  let raw: unknown;
  try {
    raw = JSON.parse(value);
  } catch (err) {
    throw new Error(`Configuration error: PLATFORM_LLMS is not JSON: ${(err as Error).message}`);
  }
  return parsePlatformModels(raw, 'PLATFORM_LLMS');
}

/** The platform models a plan allows, by their configured names (a plan may name models not configured: ignored). */
export const allowedModels = (models: PlatformModels, planModels: readonly string[]): string[] =>
  planModels.filter((m) => models.get(m)).sort();

/** A short hash of a set of allowed models: carried in a gateway credential, so a plan change revokes it. */
export const modelsHash = (allowed: readonly string[]): string =>
  createHash('sha256')
    .update([...allowed].sort().join('\n'))
    .digest('base64url')
    .slice(0, 16);
