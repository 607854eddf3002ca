import * as z from '#shared/zod.ts';

export const specIdSchema = z.lazy(() =>
  z.string().check(z.regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,254}$/, 'sandbox spec id: 1-255 of A-Z a-z 0-9 . _ : / -')),
);

const envName = z.lazy(() =>
  z.string().check(z.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')),
);
/** ECS accepts CPU and memory as numbers or numeric strings ("1024"). */
const units = z.lazy(() =>
  z.union([z.number().check(z.int(), z.positive()), z.pipe(z.string().check(z.regex(/^\d+$/)), z.transform(Number))]),
);

/**
 * A spec's warm pool (shared/sandboxes/pool.ts): `size` standbys kept ready while starts come, drained
 * to none after `idleMinutes` without a start; `spot` runs standbys on Fargate Spot (AWS only).
 */
export const warmPoolSchema = z.lazy(() =>
  z.strictObject({
    size: z.number().check(z.int(), z.gte(0), z.lte(50)),
    idleMinutes: z._default(z.number().check(z.int(), z.gte(1), z.lte(7 * 24 * 60)), 30),
    spot: z._default(z.boolean(), false),
  }),
);
export type WarmPoolConfig = z.output<typeof warmPoolSchema>;

/** What both registries share: the OpenHands SandboxSpecInfo members. */
const specFields = {
  id: specIdSchema,
  command: z.nullable(z.array(z.string()).check(z.minLength(1))),
  created_at: z.iso.datetime({ offset: true }),
  initial_env: z._default(z.record(envName, z.string()), {}),
  working_dir: z.string().check(z.minLength(1)),
  warmPool: z.optional(warmPoolSchema),
};

/** A local spec (config/sandbox-specs.json): a command run as a child process. */
export const localSpecSchema = z.lazy(() => z.strictObject({ ...specFields }));

/** A deployed spec (env SANDBOX_SPECS, written by the CDK app): an ECS task definition. */
export const fargateSpecSchema = z.lazy(() =>
  z.object({
    ...specFields,
    task_definition_arn: z.string().check(z.startsWith('arn:')),
    family: z.string().check(z.minLength(1)),
    cpu: units,
    memory: units,
    spot: z._default(z.boolean(), false),
    /** With Spot: fall back to on-demand Fargate when Spot has no capacity. */
    spot_fallback: z._default(z.boolean(), false),
  }),
);

/** A spec as the services use it; `fargate` is present only for deployed specs. */
export interface SandboxSpec {
  id: string;
  command: string[] | null;
  created_at: string;
  initial_env: Record<string, string>;
  working_dir: string;
  cpu: number | null;
  memory: number | null;
  fargate?: { taskDefinitionArn: string; family: string; spot: boolean; spotFallback?: boolean };
  /** The spec's warm pool; none (or size 0) means every start is cold. */
  warmPool?: WarmPoolConfig;
}

/** SandboxSpecInfo as the API shows it (OpenHands' members plus CPU units and MiB of memory on AWS). */
export const sandboxSpecInfoSchema = z.lazy(() =>
  z.object({
    id: z.string(),
    command: z.nullable(z.array(z.string())),
    created_at: z.string(),
    initial_env: z.record(z.string(), z.string()),
    working_dir: z.string(),
    cpu: z.nullable(z.number()).check(z.meta({ description: 'ECS CPU units (1024 = 1 vCPU); null for local specs' })),
    memory: z.nullable(z.number()).check(z.meta({ description: 'MiB of memory; null for local specs' })),
  }),
);
export type SandboxSpecInfo = z.output<typeof sandboxSpecInfoSchema>;

export const sandboxSpecPageSchema = z.lazy(() =>
  z.object({
    items: z.array(sandboxSpecInfoSchema),
    next_page_id: z.nullable(z.string()),
  }),
);

export const toSpecInfo = (spec: SandboxSpec): SandboxSpecInfo => ({
  id: spec.id,
  command: spec.command,
  created_at: spec.created_at,
  initial_env: spec.initial_env,
  working_dir: spec.working_dir,
  cpu: spec.cpu,
  memory: spec.memory,
});
