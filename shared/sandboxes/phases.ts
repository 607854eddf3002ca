import type { StartPhases } from '#shared/sandboxes/sandbox-store.ts';

const ms = (from: string | undefined, to: string) =>
  from ? Math.max(0, Date.parse(to) - Date.parse(from)) : undefined;

/** The phases at the check-in (`at`): from the claim (warm) or the container's start (cold) to here, and the total so far. */
export function checkedIn(phases: StartPhases, at: string): StartPhases {
  const from = phases.warm ? phases.claimed_at : phases.container_started_at;
  const checkIn = ms(from, at);
  return {
    ...phases,
    ...(checkIn !== undefined ? { check_in_ms: checkIn } : {}),
    total_ms: ms(phases.requested_at, at)! + (phases.restore_ms ?? 0),
  };
}

/** The snapshot restore, reported once by the program after its check-in: a phase of its own, added to the total. */
export function restored(phases: StartPhases, restoreMs: number): StartPhases {
  return { ...phases, restore_ms: restoreMs, total_ms: (phases.total_ms ?? 0) + restoreMs };
}

/**
 * ECS's timestamps of a cold task (the RUNNING "Task State Change"): PROVISIONING (created to the
 * pull's start), PENDING (the image pull) and when the container started.
 */
export function fromTaskTimes(
  phases: StartPhases,
  t: { createdAt?: string; pullStartedAt?: string; pullStoppedAt?: string; startedAt?: string },
): StartPhases {
  const provisioning = t.pullStartedAt ? ms(t.createdAt, t.pullStartedAt) : undefined;
  const pending = t.pullStoppedAt ? ms(t.pullStartedAt, t.pullStoppedAt) : undefined;
  return {
    ...phases,
    ...(provisioning !== undefined ? { provisioning_ms: provisioning } : {}),
    ...(pending !== undefined ? { pending_ms: pending } : {}),
    ...(t.startedAt ? { container_started_at: t.startedAt } : {}),
  };
}

/** CloudWatch's metric namespace for start phases. */
export const METRICS_NAMESPACE = 'AgentConversationService';

const metricNames: [keyof StartPhases, string][] = [
  ['claim_ms', 'StartClaim'],
  ['run_task_ms', 'StartRunTask'],
  ['provisioning_ms', 'StartProvisioning'],
  ['pending_ms', 'StartPending'],
  ['check_in_ms', 'StartCheckIn'],
  ['restore_ms', 'StartRestore'],
  ['total_ms', 'StartTotal'],
];

/**
 * One line in CloudWatch's embedded metric format (EMF) with the phases present, dimension `Start`
 * (`warm` or `cold`): Lambda's log pipeline turns it into metrics, no SDK call, no dependency.
 * Undefined when no phase is present.
 */
export function emfLine(
  phases: StartPhases,
  only?: readonly (keyof StartPhases)[],
  now = Date.now(),
): string | undefined {
  const present = metricNames.filter(([key]) => typeof phases[key] === 'number' && (!only || only.includes(key)));
  if (!present.length) return undefined;
  const doc: Record<string, unknown> = {
    _aws: {
      Timestamp: now,
      CloudWatchMetrics: [
        {
          Namespace: METRICS_NAMESPACE,
          Dimensions: [['Start']],
          Metrics: present.map(([, name]) => ({ Name: name, Unit: 'Milliseconds' })),
        },
      ],
    },
    Start: phases.warm ? 'warm' : 'cold',
  };
  for (const [key, name] of present) doc[name] = phases[key];
  return JSON.stringify(doc);
}

/** Writes the EMF line on Lambda (stdout is what CloudWatch reads); locally the `sandbox.started` log line carries the phases. */
export function emitStartMetrics(phases: StartPhases, only?: readonly (keyof StartPhases)[]): void {
  if (!process.env.AWS_LAMBDA_FUNCTION_NAME) return;
  const line = emfLine(phases, only);
  if (line) process.stdout.write(`${line}\n`);
}
