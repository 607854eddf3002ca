import { listSecurityAnalyzers } from '#shared/settings/operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(listSecurityAnalyzers);
