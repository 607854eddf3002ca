import type { EventBridgeEvent } from 'aws-lambda';
import { parseTaskStateChange, type EcsTaskStateChange } from '#shared/sandboxes/ecs-events.ts';
import { awsServices } from '#shared/wiring/aws.ts';

/**
 * EventBridge "ECS Task State Change" (STOPPED) in the sandbox cluster: a crash becomes ERROR, a
 * stop that was asked for PAUSED, a finished workspace wipe completes the delete. Idempotent, so a
 * redelivered event does no harm; an error is thrown so EventBridge retries (then the DLQ).
 */
export async function handler(event: EventBridgeEvent<'ECS Task State Change', EcsTaskStateChange['detail']>): Promise<void> {
  const parsed = parseTaskStateChange(event as EcsTaskStateChange);
  if (!parsed) return;
  const { sandboxes } = awsServices();
  if (parsed.kind === 'wipe') await sandboxes.continueDelete(parsed.sandboxId);
  else await sandboxes.handleInstanceStopped(parsed.stopped);
}
