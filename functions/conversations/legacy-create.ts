import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('legacyCreateConversation', ({ userId, body, baseUrl }, { conversations }) =>
  conversations.legacyCreate(userId, body, baseUrl),
);
export const handler = awsHandler(operation);
