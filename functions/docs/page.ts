import { docs } from '#shared/http/service-operations.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(docs);
