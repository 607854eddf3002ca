/**
 * What the agent needs of a user's image (SANDBOX_IMAGE_CHECK=1 on AWS): bash (its terminal) and
 * git (checkouts, the agent's own git use). A missing one ends the program with a code of its own,
 * which the control plane turns into a readable ERROR (shared/sandboxes/ecs-events.ts,
 * IMAGE_CHECK_EXIT). The CPU architecture and glibc need no check here: without them this program
 * never starts, and ECS's reason says so.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

const TOOLS = [
  { tool: 'bash', exitCode: 80 },
  { tool: 'git', exitCode: 81 },
] as const;

const onPath = (tool: string, path: string) =>
  path.split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, tool), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });

/** The first tool the image lacks, with the exit code that names it; undefined when it has them all. */
export function missingTool(
  path = process.env.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
): { tool: string; exitCode: number } | undefined {
  return TOOLS.find((t) => !onPath(t.tool, path));
}
