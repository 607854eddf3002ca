import { sandboxCommandReply } from '#shared/sandboxes/workspace-operations.ts';
import { sandboxBridge } from '#shared/services/sandbox-bridge.ts';
import { workspaceReads } from '#shared/services/workspace-reads.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(sandboxCommandReply, { sandboxBridge, workspaceReads });
