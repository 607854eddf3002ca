import { agentServerReady } from '#shared/conversations/agent-server-operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(agentServerReady);
