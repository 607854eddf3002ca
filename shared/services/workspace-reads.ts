import { SandboxService } from '#shared/sandboxes/service.ts';
import { WorkspaceReads } from '#shared/sandboxes/workspace-reads.ts';
import { defineService } from '#shared/services.ts';
import { sandboxDeps, sandboxDepsAdapters, sandboxDepsUses } from '#shared/services/sandbox-deps.ts';

/**
 * Workspace reads: commands queued as the user's others are (a SandboxService without launch options:
 * these functions start nothing), replies taken from the commands table, a paused sandbox's
 * workspace from the `workspaceArchives` adapter (its snapshot on AWS, its directory locally).
 */
export const workspaceReads = defineService(
  { adapters: [...sandboxDepsAdapters, 'conversationStore', 'workspaceArchives'], uses: [...sandboxDepsUses] },
  (c) => {
    const deps = sandboxDeps(c);
    return new WorkspaceReads(
      deps,
      c.adapter('conversationStore'),
      new SandboxService(deps),
      c.adapter('workspaceArchives'),
    );
  },
);
