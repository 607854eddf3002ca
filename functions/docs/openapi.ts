import { openapi } from '#shared/http/openapi-operation.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(openapi);
