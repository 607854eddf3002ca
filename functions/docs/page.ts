import { defineOperation, Reply } from '#shared/http/operation.ts';
import { docsPage } from '#shared/http/openapi.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation(
  'docs',
  async () => new Reply(200, docsPage(), { 'content-type': 'text/html; charset=utf-8' }),
);
export const handler = awsHandler(operation);
