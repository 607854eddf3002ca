import { organizationsList } from '#shared/auth/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(organizationsList, {});
