import { docsPage } from '#shared/http/docs-assets.ts';
import { defineOperation, Reply } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation(
  'docs',
  async () => new Reply(200, docsPage('Agent Conversation Service API'), { 'content-type': 'text/html; charset=utf-8' }),
);
export const handler = awsHandler(operation);
