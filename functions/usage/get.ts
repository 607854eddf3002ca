import { usage } from '#shared/services/usage.ts';
import { getUsage } from '#shared/usage/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { usageStore } from '#shared/wiring/aws/usage.ts';
import { plans } from '#shared/wiring/aws/plans.ts';

export const handler = awsRoute(getUsage, { usageStore, plans }, { usage });
