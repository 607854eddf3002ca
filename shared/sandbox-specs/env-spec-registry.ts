import * as z from '#shared/zod.ts';
import { fargateSpecSchema } from '#shared/sandbox-specs/model.ts';
import { ListSpecRegistry } from '#shared/sandbox-specs/spec-registry.ts';

/**
 * Deployed specs from `SANDBOX_SPECS`: the CDK app registers each spec's task definition and writes
 * this JSON array (the default first) into the functions' environment, so no request lists ECS.
 */
export function envSpecRegistry(json: string | undefined): ListSpecRegistry {
  if (!json)
    throw new Error('Configuration error: SANDBOX_SPECS (the sandbox specs registered by the deployment) is not set');
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new Error('Configuration error: SANDBOX_SPECS is not valid JSON');
  }
  const parsed = z.array(fargateSpecSchema).safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`Configuration error: SANDBOX_SPECS at [${issue.path.join('.')}]: ${issue.message}`);
  }
  return new ListSpecRegistry(
    parsed.data.map((s) => ({
      id: s.id,
      command: s.command,
      created_at: s.created_at,
      initial_env: s.initial_env,
      working_dir: s.working_dir,
      cpu: s.cpu,
      memory: s.memory,
      ...(s.warmPool ? { warmPool: s.warmPool } : {}),
      fargate: {
        taskDefinitionArn: s.task_definition_arn,
        family: s.family,
        spot: s.spot,
        spotFallback: s.spot_fallback,
      },
    })),
  );
}
