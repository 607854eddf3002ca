import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('sendMessage', ({ userId, params, body }, { conversations }) =>
  conversations.command(userId, params.conversation_id, (id) => ({ type: 'send_message', conversation_id: id, message: body })),
);
export const handler = awsHandler(operation);
