import { readFileSync } from 'node:fs';
import * as z from '#shared/zod.ts';
import { localSpecSchema } from '#shared/sandbox-specs/model.ts';
import { ListSpecRegistry } from '#shared/sandbox-specs/spec-registry.ts';

/** Local specs from a JSON file (an array of specs, the default first): `config/sandbox-specs.json`. */
export function fileSpecRegistry(path: string, warmPoolSize?: number): ListSpecRegistry {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`Configuration error: cannot read sandbox specs from ${path}: ${(err as Error).message}`);
  }
  const parsed = z.array(localSpecSchema).safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`Configuration error: ${path} at [${issue.path.join('.')}]: ${issue.message}`);
  }
  // `warmPoolSize` (WARM_POOL_SIZE; the test stack's 0) replaces every configured pool's size.
  return new ListSpecRegistry(
    parsed.data.map((s) => ({
      ...s,
      cpu: null,
      memory: null,
      ...(s.warmPool && warmPoolSize !== undefined ? { warmPool: { ...s.warmPool, size: warmPoolSize } } : {}),
    })),
  );
}
