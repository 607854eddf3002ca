import type { Failure } from '@aws-sdk/client-ecs';

/*
 * What an ECS error or RunTask failure means for a sandbox start (retry it, or not) and the sentence its
 * `detail` shows: the classification the Fargate runtime (fargate-sandbox-runtime.ts) and its image task
 * definitions (fargate-task-definitions.ts) share.
 */

type AwsErrorKind = 'throttled' | 'capacity' | 'other';

/** Throttled and capacity errors are worth retrying; others are not. */
export const awsErrorKind = (err: unknown): AwsErrorKind => {
  const name = (err as { name?: string })?.name ?? '';
  const message = (err as { message?: string })?.message ?? '';
  // "Too many concurrent attempts to create a new revision": two first starts of one image registering at once.
  if (
    /Throttl|TooManyRequests|RequestLimitExceeded|Rate exceeded|Too many concurrent attempts/i.test(
      `${name} ${message}`,
    )
  )
    return 'throttled';
  if (/capacity|ServerException/i.test(`${name} ${message}`)) return 'capacity';
  return 'other';
};

/** A readable sentence for an SDK error, for the sandbox's `detail`. */
export function describeAwsError(err: unknown): string {
  const name = (err as { name?: string })?.name ?? 'Error';
  const message = (err as { message?: string })?.message ?? String(err);
  const kind = awsErrorKind(err);
  if (kind === 'throttled') return `AWS is throttling sandbox starts (${name}: ${message})`;
  if (kind === 'capacity') return `No Fargate capacity was available (${name}: ${message})`;
  if (/task ?definition/i.test(message) || name === 'ClientException')
    return `ECS rejected the sandbox's task definition: ${message}`;
  return `ECS could not start the sandbox (${name}): ${message}`;
}

/** RunTask's `failures` as one line. */
export const failureText = (failures: Failure[] | undefined) =>
  (failures ?? [])
    .map((f) => [f.reason, f.detail].filter(Boolean).join(': '))
    .filter(Boolean)
    .join('; ') || 'RunTask started no task and gave no reason';

export const isCapacityFailure = (failures: Failure[] | undefined) =>
  /capacity|RESOURCE:|AGENT/i.test(failureText(failures));

/** A readable sentence for RunTask's `failures`, naming the capacity that was missing. */
export function describeFailures(failures: Failure[] | undefined, capacityProvider?: string): string {
  const text = failureText(failures);
  if (isCapacityFailure(failures))
    return `No ${capacityProvider === 'FARGATE_SPOT' ? 'Fargate Spot' : 'Fargate'} capacity was available (${text})`;
  return `ECS could not start the sandbox: ${text}`;
}

/** StopTask on a task that is already gone. */
export const isGone = (err: unknown) => /not found|does not exist|inactive/i.test((err as Error)?.message ?? '');

/** DescribeTaskDefinition of a family never registered. */
export const isUnknownDefinition = (err: unknown) =>
  (err as Error)?.name === 'ClientException' &&
  /unable to describe|not found|does not exist/i.test((err as Error).message);
