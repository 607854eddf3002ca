import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('legacyListConversations', ({ userId, query, baseUrl }, { conversations }) => conversations.legacyList(userId, query, baseUrl));
export const handler = awsHandler(operation);
