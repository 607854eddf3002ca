import { defineOperation } from '#shared/http/operation.ts';
import { openApiDocument } from '#shared/http/openapi.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

let doc: ReturnType<typeof openApiDocument> | undefined;

export const operation = defineOperation('openapi', async () => (doc ??= openApiDocument()));
export const handler = awsHandler(operation);
