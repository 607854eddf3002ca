import { listAgents } from '#shared/settings/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(listAgents);
