import { audit } from '#shared/services/audit.ts';
import { deleteKey } from '#shared/auth/operations.ts';
import { apiKeys } from '#shared/services/api-keys.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { auditStore } from '#shared/wiring/aws/accounts.ts';
import { keyStore } from '#shared/wiring/aws/keys.ts';

export const handler = awsRoute(deleteKey, { keyStore, auditStore }, { apiKeys, audit });
