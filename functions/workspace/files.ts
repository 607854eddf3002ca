import { workspaceFiles } from '#shared/sandboxes/workspace-operations.ts';
import { workspaceReads } from '#shared/services/workspace-reads.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(workspaceFiles, { workspaceReads });
