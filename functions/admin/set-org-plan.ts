import { setOrgPlan } from '#shared/accounts/operations.ts';
import { organizations } from '#shared/services/organizations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { accountStore, auditStore } from '#shared/wiring/aws/accounts.ts';
import { plans } from '#shared/wiring/aws/plans.ts';

export const handler = awsRoute(setOrgPlan, { accountStore, auditStore, plans }, { organizations });
