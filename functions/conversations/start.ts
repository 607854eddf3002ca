import { startConversation } from '#shared/conversations/operations.ts';
import { conversationStarts } from '#shared/services/conversation-start.ts';
import { idempotency } from '#shared/services/idempotency.ts';
import { poolClaims } from '#shared/services/pool-claims.ts';
import { awsRoute } from '#shared/wiring/aws.ts';

export const handler = awsRoute(startConversation, { conversationStarts, idempotency, poolClaims });
