import { logger } from '#shared/logging.ts';
import type { Adapters } from '#shared/wiring/adapters.ts';

/** What the snapshot-removal function is invoked with. */
export interface SnapshotRemovalRequest {
  sandboxId: string;
}

/**
 * Removes a deleted sandbox's snapshot objects, asked once its last task stopped (a task saves its
 * workspace after SIGTERM, so not before). Adapters: an asynchronous invoke of the function that
 * holds the S3 client (`shared/wiring/aws/snapshot-removal.ts`), so the functions that stop tasks
 * carry no S3 client; null where workspaces are directories (locally).
 */
export interface SnapshotRemoval {
  remove(sandboxId: string): Promise<void>;
}

/** The snapshot-removal function: deletes every object under the sandbox's own prefix (the prefix rule refuses anything but a sandbox id). */
export async function removeSnapshots(
  event: SnapshotRemovalRequest,
  adapters: Pick<Adapters, 'workspaceSnapshots'>,
): Promise<void> {
  const snapshots = adapters.workspaceSnapshots;
  if (!snapshots) throw new Error('This deployment keeps workspaces as directories: there are no snapshots to remove');
  // Only a string: anything else is refused by the prefix rule as an empty id, never coerced into one.
  const sandboxId = typeof event?.sandboxId === 'string' ? event.sandboxId : '';
  const removed = await snapshots.prune(sandboxId);
  logger.info('sandbox.snapshots-removed', { sandboxId, removed });
}
