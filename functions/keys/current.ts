import { currentKey } from '#shared/auth/operations.ts';
import { apiKeys } from '#shared/services/api-keys.ts';
import { awsRoute } from '#shared/wiring/aws.ts';
import { keyStore } from '#shared/wiring/aws/keys.ts';

export const handler = awsRoute(currentKey, { keyStore }, { apiKeys });
