import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('startConversation', ({ userId, body, baseUrl }, { conversations }) =>
  conversations.start(userId, body, baseUrl),
);
export const handler = awsHandler(operation);
