import { agentGitChanges } from '#shared/sandboxes/workspace-operations.ts';
import { workspaceReads } from '#shared/services/workspace-reads.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { commandPush } from '#shared/wiring/aws/bridge-socket.ts';
import { conversationStore } from '#shared/wiring/aws/conversations.ts';
import { workspaceArchives } from '#shared/wiring/aws/s3.ts';
import { sandboxStore } from '#shared/wiring/aws/sandboxes.ts';

export const handler = awsRoute(
  agentGitChanges,
  { conversationStore, sandboxStore, commandPush, workspaceArchives },
  { workspaceReads },
);
