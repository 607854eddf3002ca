import type { PlatformModels } from '#shared/llm/platform-models.ts';

/** Local keys: each model's `api_key_env`, read per call (so a key set after start works). */
export const envKey =
  (models: PlatformModels, env: NodeJS.ProcessEnv) =>
  async (model: string): Promise<string> => {
    const m = models.get(model);
    const key = m?.api_key_env ? env[m.api_key_env]?.trim() : undefined;
    if (!key) throw new Error(`No upstream key for ${model}: set ${m?.api_key_env ?? 'its api_key_env'}`);
    return key;
  };

/**
 * AWS keys: each model's `api_key_arn` (an SSM SecureString or a Secrets Manager secret), read on
 * first use and cached for `ttlMs` (5 minutes), so a rotated key is picked up without a redeploy.
 * `read` does the one SDK call (shared/wiring/aws/llm.ts).
 */
export function arnKeys(
  models: PlatformModels,
  read: (arn: string) => Promise<string>,
  ttlMs = 300_000,
  now: () => number = Date.now,
): (model: string) => Promise<string> {
  const cache = new Map<string, { value: Promise<string>; at: number }>();
  return async (model) => {
    const arn = models.get(model)?.api_key_arn;
    if (!arn) throw new Error(`No upstream key ARN for ${model}: set api_key_arn in the platformLlms context`);
    const hit = cache.get(arn);
    if (hit && now() - hit.at < ttlMs) return hit.value;
    const value = read(arn);
    cache.set(arn, { value, at: now() });
    value.catch(() => cache.delete(arn));
    return value;
  };
}
