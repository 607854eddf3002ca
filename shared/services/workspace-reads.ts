import { WorkspaceReads } from '#shared/sandboxes/workspace-reads.ts';
import { defineService } from '#shared/services.ts';
import { sandboxQueue } from '#shared/services/sandbox-queue.ts';

/**
 * Workspace reads: commands queued as the user's others are (the sandbox queue: these functions start
 * nothing), replies taken from the commands table, a paused sandbox's workspace from the
 * `workspaceArchives` adapter (its snapshot on AWS, its directory locally).
 */
export const workspaceReads = defineService(
  { adapters: ['sandboxStore', 'conversationStore', 'workspaceArchives'], uses: [sandboxQueue] },
  (c) =>
    new WorkspaceReads(
      { store: c.adapter('sandboxStore') },
      c.adapter('conversationStore'),
      c.use(sandboxQueue),
      c.adapter('workspaceArchives'),
    ),
);
