import { getOptionsConfig } from '#shared/options/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(getOptionsConfig);
