import { audit } from '#shared/services/audit.ts';
import { deleteKey } from '#shared/auth/operations.ts';
import { apiKeys } from '#shared/services/api-keys.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(deleteKey, { apiKeys, audit });
