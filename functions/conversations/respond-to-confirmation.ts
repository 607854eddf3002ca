import { defineOperation } from '#shared/http/operation.ts';
import { awsHandler } from '#shared/wiring/aws.ts';

export const operation = defineOperation('respondToConfirmation', ({ userId, params, body }, { conversations }) =>
  conversations.command(userId, params.conversation_id, (id) => ({
    type: 'respond_to_confirmation',
    conversation_id: id,
    accept: body.accept,
    reason: body.reason ?? null,
  })),
);
export const handler = awsHandler(operation);
