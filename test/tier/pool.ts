import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { until } from '#test/tier/flows.ts';
import { OPERATOR_KEY } from '#test/tier/aws.ts';
import type { TierStack } from '#test/tier/stack.ts';
import { ofType, REGION, type Template } from '#test/tier/template.ts';

/*
 * The warm pool in the tier, for its test (test/tier/warm-pool.test.ts) and the tier's bench
 * (bench/fargate.ts): the default spec given a pool as a deployer's `sandboxSpecs` context would, and
 * the pool's standbys read from its table with the operator's credentials.
 */

export interface PoolConfig {
  size: number;
  idleMinutes: number;
  spot: boolean;
}

/** The default spec (the first of SANDBOX_SPECS, a JSON array, possibly joined with task definition ARNs) gets `warmPool`. */
export function withPool(t: Template, pool: PoolConfig): number {
  let changed = 0;
  for (const [, r] of ofType(t, 'AWS::Lambda::Function')) {
    const vars = r.Properties?.Environment?.Variables;
    if (!vars?.SANDBOX_SPECS) continue;
    const add = (s: string) => s.replace(/^\[\{/, `[{"warmPool":${JSON.stringify(pool)},`);
    const v = vars.SANDBOX_SPECS;
    if (typeof v === 'string') vars.SANDBOX_SPECS = add(v);
    else v['Fn::Join'][1][0] = add(v['Fn::Join'][1][0]);
    changed++;
  }
  return changed;
}

export const operator = (tier: TierStack) =>
  new DynamoDBClient({
    region: REGION,
    endpoint: tier.aws.url,
    credentials: { accessKeyId: OPERATOR_KEY, secretAccessKey: 'operator-secret' },
  });

/** The pool table's standby items. */
export const standbys = async (tier: TierStack) =>
  (await operator(tier).send(new ScanCommand({ TableName: tier.outputs.PoolTableName!, ConsistentRead: true })))
    .Items!.filter((i) => i.id!.S!.startsWith('sb_'))
    .map((i) => ({
      id: i.id!.S!,
      status: i.status!.S!,
      ref: i.ref?.S,
      /** Its pool socket's connection, as `$connect` recorded it. */
      connectionId: i.connectionId?.S,
      heartbeatAt: i.heartbeatAt?.S,
      /** What it was started from: the task definition ARN. */
      revision: i.revision?.S,
    }));

/** Waits until at least `n` standbys are ready. */
export const ready = (tier: TierStack, n: number, timeoutMs = 30_000) =>
  until(
    tier,
    `${n} ready standby(s)`,
    async () => (await standbys(tier)).filter((s) => s.status === 'ready'),
    (l) => l.length >= n,
    timeoutMs,
  );
